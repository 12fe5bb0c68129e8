# contactlab — thin wrapper over the project's own scripts and CMake.
#   make demo   install deps, build Release, run the ball-on-slope demo, write the figure
#   make test   install deps, build, run every C++ and Python test
#   make validate  the long validation runs of the sap formulation (results/validate/sap)
#   make sweeps the example sweeps (data/sweeps) and their figures (results/sweeps, results/figures)
#   make test-sanitize  the C++ tests built with AddressSanitizer and UndefinedBehaviorSanitizer
#               (build-sanitize/; too slow for `make test` on 2 cores)
#   make materials  the liquid and sand scenes under every formulation (data/sweeps/sand_pile,
#               sand_cohesion, floating_box, sand_on_sphere, sphere_into_sand) and their figures
#               (sap's and penalty's floating_box runs take over 17 minutes each)
#   make defaults  every formulation at its defaults on the validation scenes (data/sweeps/defaults_*),
#               checked by analysis/defaults_report.py (several hours on 2 cores)
#   make paper  the comparison paper from its sweeps (paper/Snakefile): results/paper/contactlab.pdf
#   make paper-quick  the same from reduced runs (paper/quick.toml), in minutes:
#               results/paper-quick/paper/contactlab.pdf
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
PYTHON ?= /usr/bin/python3
CONTACTLAB := $(BUILD_DIR)/experiments/contactlab

SANITIZE_BUILD_DIR ?= build-sanitize

.PHONY: all deps configure build test test-sanitize format format-check demo validate sweeps materials cloth defaults paper \
  paper-quick bench clean

all: build

deps:
	./scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	CONTACTLAB_BIN=$(abspath $(CONTACTLAB)) $(PYTHON) -m pytest -q tests/python

# The C++ layout of .clang-format: format-check lists files that differ, format rewrites them.
format-check: deps
	./scripts/check-format

format: deps
	./scripts/check-format --fix

# Leaks are reported too; UBSan findings abort the test that made them.
test-sanitize: deps
	cmake -S . -B $(SANITIZE_BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTLAB_SANITIZE=ON \
	  -DCONTACTLAB_CUDA=OFF -DCONTACTLAB_BENCHMARKS=OFF
	cmake --build $(SANITIZE_BUILD_DIR) -j $(JOBS)
	cd $(SANITIZE_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

demo: build
	CONTACTLAB_BIN=$(abspath $(CONTACTLAB)) PYTHON=$(PYTHON) ./scripts/demo

validate: build
	CONTACTLAB_BIN=$(abspath $(CONTACTLAB)) PYTHON=$(PYTHON) ./scripts/validate-sap

sweeps: build
	@mkdir -p results/figures
	for sweep in ball_on_slope squeezed_cube; do \
	  $(CONTACTLAB) sweep run data/sweeps/$$sweep.toml -j $(JOBS) --out-dir results/sweeps/$$sweep && \
	  $(PYTHON) -m analysis.figures.sweep_$$sweep results/sweeps/$$sweep --out results/figures/sweep_$$sweep.png \
	  || exit 1; \
	done

materials: build
	@mkdir -p results/figures
	for sweep in sand_pile sand_cohesion floating_box sand_on_sphere sphere_into_sand; do \
	  OMP_NUM_THREADS=1 $(CONTACTLAB) sweep run data/sweeps/$$sweep.toml -j $(JOBS) --out-dir results/sweeps/$$sweep \
	  || exit 1; \
	done
	$(PYTHON) -m analysis.figures.sand_pile results/sweeps/sand_pile results/sweeps/sand_cohesion \
	  --out results/figures/sand_pile.png
	$(PYTHON) -m analysis.figures.floating_box results/sweeps/floating_box --out results/figures/floating_box.png
	$(PYTHON) -m analysis.figures.sand_on_sphere results/sweeps/sand_on_sphere --out results/figures/sand_on_sphere.png
	$(PYTHON) -m analysis.figures.sphere_into_sand results/sweeps/sphere_into_sand \
	  --out results/figures/sphere_into_sand.png

cloth: build
	@mkdir -p results/figures
	for sweep in hanging_cloth draped_sphere box_bagging; do \
	  OMP_NUM_THREADS=1 $(CONTACTLAB) sweep run data/sweeps/$$sweep.toml -j $(JOBS) --out-dir results/sweeps/$$sweep \
	  || exit 1; \
	done
	$(PYTHON) -m analysis.figures.hanging_cloth results/sweeps/hanging_cloth --out results/figures/hanging_cloth.png
	$(PYTHON) -m analysis.figures.draped_sphere results/sweeps/draped_sphere --out results/figures/draped_sphere.png
	$(PYTHON) -m analysis.figures.box_bagging results/sweeps/box_bagging --out results/figures/box_bagging.png

defaults: build
	for sweep in incline_block wedge ball_on_slope squeezed_cube pyramid close_lift_shake; do \
	  $(CONTACTLAB) sweep run data/sweeps/defaults_$$sweep.toml -j $(JOBS) --out-dir results/defaults/$$sweep || exit 1; \
	done
	$(PYTHON) -m analysis.defaults_report results/defaults

paper: build
	./scripts/install-deps --paper
	snakemake -s paper/Snakefile -j $(JOBS) paper --config contactlab=$(abspath $(CONTACTLAB)) python=$(PYTHON)

paper-quick: build
	./scripts/install-deps --paper
	snakemake -s paper/Snakefile -j $(JOBS) paper --config quick=1 contactlab=$(abspath $(CONTACTLAB)) python=$(PYTHON)

# OMP_THREAD_LIMIT binds CHOLMOD's compiled-in num_threads(4) too (README, Sweeps).
bench: build
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(BUILD_DIR)/tests/bench_explicit_substep
	OMP_NUM_THREADS=2 OMP_THREAD_LIMIT=2 $(BUILD_DIR)/tests/bench_explicit_substep
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(BUILD_DIR)/tests/bench_sap_step
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(BUILD_DIR)/tests/bench_sap_scenes

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_BUILD_DIR)
