#include "experiments/slurm_script.h"

#include <sstream>
#include <string_view>

#include "experiments/checkpoint.h"
#include "experiments/file_safety.h"
#include "formulations/parameters.h"

namespace contactlab::experiments {
namespace {

// Single-quotes a word for bash.
std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// #SBATCH lines are not parsed by a shell: values must not need quoting. Refused: spaces and
// every control byte (\r, \v and \f end or split a directive as surely as \n), quotes, $, `
// and backslashes.
std::string DirectiveValue(const std::string& key, const std::string& value) {
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f || std::string_view("'\"\\$`").find(c) != std::string_view::npos) {
      throw InputError(key + ": '" + value +
                       "' cannot appear in an #SBATCH line (spaces, control characters, quotes, $, ` or \\)");
    }
  }
  return value;
}

}  // namespace

std::string SlurmArrayScript(const SweepDefinition& sweep, int run_count, const SlurmOptions& options) {
  if (run_count < 1) throw InputError(sweep.file.string() + ": the sweep has no runs");
  if (options.max_concurrent < 1) throw InputError("--max-concurrent: must be at least 1");
  if (options.cpus_per_task < 1) throw InputError("--cpus-per-task: must be at least 1");
  if (options.signal_seconds < 1) throw InputError("--signal-before: must be at least 1 s");
  ParseCheckpointInterval(options.checkpoint_every);
  RequireNoControlCharacters(options.checkpoint_every, "--checkpoint-every");
  // Every path and name below is single-quoted where a shell reads it; what no quoting can
  // carry (a newline ends a comment and starts a command) is refused.
  RequireNoControlCharacters(sweep.file.string(), "the sweep file's path");
  RequireNoControlCharacters(sweep.name, "the sweep's name");
  RequireNoControlCharacters(options.executable.string(), "the contactlab executable's path");
  RequireNoControlCharacters(options.out_dir.string(), "--out-dir");
  const std::filesystem::path out_dir = std::filesystem::absolute(options.out_dir).lexically_normal();
  const std::filesystem::path manifest = out_dir / "manifest.jsonl";
  const std::filesystem::path logs = out_dir / "logs";
  std::ostringstream script;
  script << "#!/bin/bash\n"
         << "# contactlab sweep " << ShellQuote(sweep.name) << " (" << ShellQuote(sweep.file.string())
         << "): " << run_count << " runs, one per array task.\n"
         << "#   submit:   sbatch " << ShellQuote((out_dir / "sweep.slurm").string()) << "\n"
         << "#   resubmit after failures: complete runs are skipped, stopped ones resume\n"
         << "#   table:    contactlab collect " << ShellQuote(out_dir.string()) << " > results.csv\n"
         << "#SBATCH --job-name=" << DirectiveValue("name", "contactlab-" + sweep.name) << "\n"
         << "#SBATCH --array=0-" << run_count - 1 << "%" << options.max_concurrent << "\n"
         << "#SBATCH --ntasks=1\n"
         << "#SBATCH --cpus-per-task=" << options.cpus_per_task << "\n"
         << "#SBATCH --time=" << DirectiveValue("--time", options.time_limit) << "\n"
         << "#SBATCH --mem=" << DirectiveValue("--mem", options.memory) << "\n"
         << "#SBATCH --signal=B:USR1@" << options.signal_seconds << "\n"
         << "#SBATCH --requeue\n"
         << "#SBATCH --open-mode=append\n";  // a requeued task's log keeps its earlier attempts
  if (!options.partition.empty())
    script << "#SBATCH --partition=" << DirectiveValue("--partition", options.partition) << "\n";
  script
      << "#SBATCH --output=" << DirectiveValue("--out-dir", (logs / "slurm-%A_%a.log").string()) << "\n"
      << "set -euo pipefail\n"
      << ": \"${SLURM_ARRAY_TASK_ID:?run this script with sbatch (or set SLURM_ARRAY_TASK_ID to a manifest index)}\"\n"
      << "DEFAULT_CONTACTLAB=" << ShellQuote(options.executable.string()) << "\n"
      << "CONTACTLAB=\"${CONTACTLAB:-$DEFAULT_CONTACTLAB}\"\n"
      << "export OMP_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-" << options.cpus_per_task
      << "}\"\n"
      // CHOLMOD's num_threads(4) ignores OMP_NUM_THREADS; the limit binds it (sweep_executor.cc).
      << "export OMP_THREAD_LIMIT=\"${OMP_THREAD_LIMIT:-$OMP_NUM_THREADS}\"\n"
      // Before the time limit Slurm sends USR1 to this shell, which passes it on; the run
      // writes a checkpoint at its next step boundary and exits with 128 + 10. The task is then
      // requeued: Slurm starts this script again and the run resumes from its checkpoint. (bash's
      // wait returns when a trapped signal arrives, so it waits again until the run has ended,
      // then once more for the run's own exit status.)
      << "\"$CONTACTLAB\" run --manifest " << ShellQuote(manifest.string()) << " --index \"$SLURM_ARRAY_TASK_ID\" \\\n"
      << "  --out-dir " << ShellQuote(out_dir.string()) << " --quiet --checkpoint-on-signal --checkpoint-every "
      << ShellQuote(options.checkpoint_every) << " &\n"
      << "run=$!\n"
      << "trap 'kill -USR1 \"$run\" 2>/dev/null || true' USR1\n"
      << "trap 'kill -TERM \"$run\" 2>/dev/null || true' TERM\n"
      << "while kill -0 \"$run\" 2>/dev/null; do wait \"$run\" || true; done\n"
      << "status=0\n"
      << "wait \"$run\" || status=$?\n"
      << "if [ \"$status\" -eq 138 ]; then\n"
      << "  echo \"contactlab: checkpointed before the time limit; requeueing task $SLURM_ARRAY_TASK_ID\" >&2\n"
      << "  scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n"
      << "fi\n"
      << "exit \"$status\"\n";
  return script.str();
}

}  // namespace contactlab::experiments
