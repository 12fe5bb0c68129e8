# contactlab — thin wrapper over the project's own scripts and CMake.
#   make demo   install deps, build Release, run the ball-on-slope demo, write the figure
#   make test   install deps, build, run every C++ and Python test
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
PYTHON ?= /usr/bin/python3
CONTACTLAB := $(BUILD_DIR)/experiments/contactlab

.PHONY: all deps configure build test demo bench clean

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

demo: build
	CONTACTLAB_BIN=$(abspath $(CONTACTLAB)) PYTHON=$(PYTHON) ./scripts/demo

bench: build
	OMP_NUM_THREADS=1 $(BUILD_DIR)/tests/bench_explicit_substep
	OMP_NUM_THREADS=2 $(BUILD_DIR)/tests/bench_explicit_substep

clean:
	rm -rf $(BUILD_DIR)
