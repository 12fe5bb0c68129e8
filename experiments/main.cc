// contactlab: run MPM–rigid contact scenarios under any formulation and log them to HDF5.
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "experiments/collect.h"
#include "experiments/file_safety.h"
#include "experiments/run_driver.h"
#include "experiments/scenario.h"
#include "experiments/slurm_script.h"
#include "experiments/sweep.h"
#include "experiments/sweep_executor.h"
#include "experiments/sweep_records.h"
#include "formulations/formulation.h"
#include "registry/registered_formulations.h"

namespace {

// Exit codes: 0 ok, 1 internal error, 2 bad input (nothing written), 3 the run diverged
// (its file is complete and records status "diverged").
constexpr int kExitInternalError = 1;
constexpr int kExitInputError = 2;
constexpr int kExitDiverged = 3;

void PrintList() {
  using namespace contactlab;
  std::printf("scenarios:\n");
  for (const auto& info : experiments::RegisteredScenarios()) {
    std::printf("  %-20s %s\n", info.name.c_str(), info.description.c_str());
  }
  std::printf("formulations:\n");
  for (const auto& info : RegisteredFormulations()) {
    std::printf("  %-20s %s\n", info.name.c_str(), info.description.c_str());
  }
#ifdef CONTACTLAB_HAS_CUDA
  std::printf("CUDA: built with nvcc\n");
#else
  std::printf("CUDA: not built\n");
#endif
}

void OnInterruptSignal(int signal_number) {
  contactlab::experiments::RequestInterrupt(signal_number);
}

// A run stops between steps on SIGINT, SIGTERM, SIGHUP or SIGUSR1, removing its partial file
// (and, with --checkpoint-on-signal, writing a checkpoint first).
void InstallRunInterruptHandlers() {
  struct sigaction action {};
  action.sa_handler = OnInterruptSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaction(signal_number, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) then fails the write with EFBIG, which takes the same
  // one-line path as a full disk and removes the partial file, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"contactlab: compare MPM-rigid frictional contact formulations on analytic scenes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "contactlab 0.1.0");

  CLI::App* list = app.add_subcommand("list", "List scenarios and formulations");

  contactlab::experiments::RunRequest request;
  std::string manifest, run_out_dir;
  int manifest_index = -1;
  CLI::App* run = app.add_subcommand(
      "run", "Run one scenario under one formulation and write RUN.h5, or run line --index of a sweep manifest");
  CLI::Option* scenario_option = run->add_option("scenario", request.scenario, "Scenario name (see `contactlab list`)");
  CLI::Option* formulation_option = run->add_option("--formulation,-f", request.formulation, "Formulation name");
  CLI::Option* config_option =
      run->add_option("--config,-c", request.config_file, "Scene TOML file (e.g. data/scenes/ball_on_slope.toml)");
  CLI::Option* set_option =
      run->add_option("--set,-s", request.overrides, "Override a parameter: key=value (repeatable)");
  CLI::Option* out_option = run->add_option("--out,-o", request.output_path, "Output HDF5 file");
  CLI::Option* manifest_option =
      run->add_option("--manifest", manifest, "Sweep manifest (from `contactlab sweep expand`): run one of its lines");
  CLI::Option* index_option = run->add_option("--index", manifest_index, "Manifest line to run (0-based)");
  CLI::Option* out_dir_option = run->add_option(
      "--out-dir", run_out_dir, "Folder of the sweep's runs: writes DIR/<run_id>.h5, skipped when complete");
  run->add_flag("--quiet,-q", request.quiet, "Print neither the resolved configuration nor progress");
  run->add_option("--checkpoint-every", request.checkpoint.every,
                  "Write a checkpoint (RUN.h5.checkpoint) every N steps (200) or wall time (90s, 30min, 2h)");
  run->add_flag("--checkpoint-on-signal", request.checkpoint.on_signal,
                "On SIGUSR1, SIGTERM, SIGINT or SIGHUP, write a checkpoint at the next step boundary before stopping");
  run->add_option("--stop-at", request.checkpoint.stop_at,
                  "Write a checkpoint after this step and stop (no run file yet); run again to resume")
      ->check(CLI::NonNegativeNumber);
  CLI::Option* resume_option = run->add_option(
      "--resume", request.checkpoint.resume,
      "Resume from this checkpoint (default: RUN.h5.checkpoint when it exists); the configuration must match");
  for (CLI::Option* single :
       {scenario_option, formulation_option, config_option, set_option, out_option, resume_option}) {
    single->excludes(manifest_option);
  }
  index_option->needs(manifest_option);
  out_dir_option->needs(manifest_option);
  manifest_option->needs(index_option)->needs(out_dir_option);

  CLI::App* sweep = app.add_subcommand("sweep", "Expand and run sweeps (data/sweeps/*.toml)");
  sweep->require_subcommand(1);
  std::string sweep_file, sweep_out_dir;
  std::vector<std::string> sweep_overrides;
  const char* const sweep_set_help = "Override a parameter of every run after [base]: key=value (repeatable)";
  CLI::App* expand = sweep->add_subcommand("expand", "Print the sweep's resolved runs as JSON Lines (a manifest)");
  expand->add_option("sweep", sweep_file, "Sweep TOML file")->required();
  expand->add_option("--set,-s", sweep_overrides, sweep_set_help);
  contactlab::experiments::LocalExecutorOptions local;
  CLI::App* sweep_run = sweep->add_subcommand("run", "Run every run of a sweep locally, N at a time");
  sweep_run->add_option("sweep", sweep_file, "Sweep TOML file")->required();
  sweep_run->add_option("--jobs,-j", local.jobs, "Runs at a time")->capture_default_str();
  sweep_run->add_option("--checkpoint-every", local.checkpoint_every,
                        "Each run writes a checkpoint every N steps or wall time (30min); a stopped sweep run again "
                        "resumes its unfinished runs from their checkpoints");
  sweep_run->add_option("--threads-per-run", local.threads_per_run,
                        "OMP_NUM_THREADS of each run (default: cores / jobs unless OMP_NUM_THREADS is set)");
  sweep_run->add_option("--out-dir", sweep_out_dir, "Output folder")->required();
  sweep_run->add_option("--set,-s", sweep_overrides, sweep_set_help);
  contactlab::experiments::SlurmOptions slurm;
  std::string slurm_script_path;
  CLI::App* sweep_slurm = sweep->add_subcommand("slurm", "Write the manifest and a Slurm job-array script");
  sweep_slurm->add_option("sweep", sweep_file, "Sweep TOML file")->required();
  sweep_slurm->add_option("--out-dir", sweep_out_dir, "Output folder of the runs (on the cluster's shared file system)")
      ->required();
  sweep_slurm->add_option("--script", slurm_script_path, "Script path (default: OUT_DIR/sweep.slurm)");
  sweep_slurm->add_option("--max-concurrent", slurm.max_concurrent, "Array tasks running at once (%K)")
      ->capture_default_str();
  sweep_slurm->add_option("--cpus-per-task", slurm.cpus_per_task, "Cores per run (OMP_NUM_THREADS)")
      ->capture_default_str();
  sweep_slurm->add_option("--time", slurm.time_limit, "Time limit per run")->capture_default_str();
  sweep_slurm->add_option("--mem", slurm.memory, "Memory per run")->capture_default_str();
  sweep_slurm->add_option("--partition", slurm.partition, "Slurm partition (default: the cluster's)");
  sweep_slurm->add_option("--checkpoint-every", slurm.checkpoint_every, "Each run's checkpoint interval")
      ->capture_default_str();
  sweep_slurm
      ->add_option("--signal-before", slurm.signal_seconds,
                   "Seconds before the time limit at which a run checkpoints and its task is requeued")
      ->capture_default_str();

  std::string collect_dir, collect_out;
  CLI::App* collect = app.add_subcommand("collect", "Print one CSV row per run of a sweep folder");
  collect->add_option("dir", collect_dir, "Folder of run files (with manifest.jsonl for a sweep)")->required();
  collect->add_option("--out,-o", collect_out, "Write the CSV here instead of standard output");

  std::string describe_scenario, describe_formulation = "hybrid_impulse";
  CLI::App* describe = app.add_subcommand("describe", "List every parameter of a scenario and formulation");
  describe->add_option("scenario", describe_scenario, "Scenario name")->required();
  describe->add_option("--formulation,-f", describe_formulation, "Formulation name");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version print and exit 0; a malformed command line is bad input.
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    std::fprintf(stderr, "contactlab: error: %s (see --help)\n", contactlab::OneLine(error.what()).c_str());
    return kExitInputError;
  }

  try {
    if (list->parsed()) {
      PrintList();
    } else if (describe->parsed()) {
      contactlab::experiments::DescribeParameters(describe_scenario, describe_formulation);
    } else if (run->parsed() && !manifest.empty()) {
      InstallRunInterruptHandlers();
      const auto result = contactlab::experiments::RunManifestEntry(manifest, manifest_index, run_out_dir,
                                                                    request.quiet, request.checkpoint);
      if (!result.skipped && result.status == "diverged") {
        std::fprintf(stderr, "contactlab: run diverged (%s); status recorded in %s\n",
                     contactlab::OneLine(result.message).c_str(), result.file.string().c_str());
        return kExitDiverged;
      }
    } else if (run->parsed()) {
      if (request.scenario.empty() || request.formulation.empty() || request.output_path.empty()) {
        throw contactlab::InputError(
            "run: give SCENARIO -f FORMULATION -o RUN.h5, or --manifest M --index I --out-dir DIR");
      }
      InstallRunInterruptHandlers();
      const auto outcome = contactlab::experiments::ExecuteRun(request);
      if (outcome.status == contactlab::experiments::RunStatus::kStopped && !request.quiet) {
        std::fprintf(stderr, "contactlab: %s: the same command resumes from it\n", outcome.message.c_str());
      }
      if (outcome.status == contactlab::experiments::RunStatus::kDiverged) {
        std::fprintf(stderr, "contactlab: run diverged (%s); status recorded in %s\n",
                     contactlab::OneLine(outcome.message).c_str(), request.output_path.c_str());
        return kExitDiverged;
      }
    } else if (expand->parsed()) {
      std::vector<std::string> warnings;
      auto definition = contactlab::experiments::LoadSweep(sweep_file);
      definition.overrides = sweep_overrides;
      const auto entries = contactlab::experiments::ExpandSweep(definition, &warnings);
      for (const std::string& warning : warnings) std::fprintf(stderr, "contactlab: warning: %s\n", warning.c_str());
      for (const auto& entry : entries) std::cout << contactlab::experiments::ToJsonLine(entry) << "\n";
      std::fprintf(stderr, "contactlab: %zu runs\n", entries.size());
    } else if (sweep_run->parsed()) {
      local.out_dir = sweep_out_dir;
      auto definition = contactlab::experiments::LoadSweep(sweep_file);
      definition.overrides = sweep_overrides;
      contactlab::experiments::RunSweepLocally(definition, local);
    } else if (sweep_slurm->parsed()) {
      const auto definition = contactlab::experiments::LoadSweep(sweep_file);
      std::vector<std::string> warnings;
      const auto entries = contactlab::experiments::ExpandSweep(definition, &warnings);
      for (const std::string& warning : warnings) std::fprintf(stderr, "contactlab: warning: %s\n", warning.c_str());
      slurm.out_dir = sweep_out_dir;
      slurm.executable = std::filesystem::read_symlink("/proc/self/exe");
      const std::string script =
          contactlab::experiments::SlurmArrayScript(definition, static_cast<int>(entries.size()), slurm);
      const std::filesystem::path out_dir(sweep_out_dir);
      const std::filesystem::path script_path =
          slurm_script_path.empty() ? out_dir / "sweep.slurm" : std::filesystem::path(slurm_script_path);
      const auto inputs = contactlab::experiments::SweepInputs(definition);
      contactlab::experiments::RequireNotAnInput(out_dir / "manifest.jsonl", "manifest", inputs);
      auto script_inputs = inputs;
      script_inputs.emplace_back(out_dir / "manifest.jsonl", "manifest");
      contactlab::experiments::RequireNotAnInput(script_path, "Slurm script (--script)", script_inputs);
      contactlab::experiments::EnsureWritableFolder(out_dir, "output folder");
      const contactlab::experiments::FolderLock lock(out_dir, "running a sweep");
      // Slurm writes the tasks' logs there: created here, and refused when it is a link.
      const contactlab::experiments::Subfolder logs(out_dir, "logs", "log folder");
      contactlab::experiments::WriteManifest(out_dir / "manifest.jsonl", entries);
      contactlab::experiments::WriteFileAtomically(script_path, script);
      std::filesystem::permissions(script_path, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
      std::printf("%s: %zu array tasks; submit with: sbatch %s\n", script_path.string().c_str(), entries.size(),
                  script_path.string().c_str());
    } else if (collect->parsed()) {
      if (!collect_out.empty()) {
        contactlab::experiments::CheckOutputPath(collect_out, "table (-o)");
        contactlab::experiments::RequireNotAnInput(collect_out, "table (-o)",
                                                   contactlab::experiments::CollectInputs(collect_dir));
      }
      const auto table = contactlab::experiments::CollectRuns(collect_dir);
      if (collect_out.empty()) {
        contactlab::experiments::WriteCsv(table, std::cout);
      } else {
        std::ostringstream text;
        contactlab::experiments::WriteCsv(table, text);
        contactlab::experiments::WriteFileAtomically(collect_out, text.str());
      }
    }
  } catch (const contactlab::InputError& error) {
    std::fprintf(stderr, "contactlab: error: %s\n", error.what());  // one line by construction
    return kExitInputError;
  } catch (const contactlab::experiments::Interrupted& interrupted) {
    if (!interrupted.checkpoint.empty()) {
      std::fprintf(stderr, "contactlab: %s; checkpoint written to %s: the same command resumes from it\n",
                   interrupted.what(), interrupted.checkpoint.c_str());
    } else {
      std::fprintf(stderr, "contactlab: %s; nothing written for the unfinished run\n", interrupted.what());
    }
    return 128 + interrupted.signal_number;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "contactlab: internal error: %s\n", contactlab::OneLine(error.what()).c_str());
    return kExitInternalError;
  }
  return 0;
}
