#include "experiments/sweep_executor.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>
#include <thread>

#include "experiments/checkpoint.h"
#include "experiments/collect.h"
#include "experiments/file_safety.h"
#include "experiments/run_driver.h"
#include "experiments/sweep_records.h"

extern char** environ;

namespace contactlab::experiments {
namespace {

using Clock = std::chrono::steady_clock;

struct RunningChild {
  int index;
  Clock::time_point start;
  std::filesystem::path log;
};

// The signal that asked the sweep to stop (0: none); set by the handler, read by the loop.
volatile std::sig_atomic_t stop_signal = 0;

void OnStopSignal(int signal_number) {
  stop_signal = signal_number;
}

// SIGINT, SIGTERM and SIGHUP set stop_signal.
void InstallStopHandlers() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
}

// Starts `contactlab run --manifest M --index I --out-dir D --quiet --checkpoint-on-signal`
// (and --checkpoint-every when the sweep sets it) with stdout and stderr
// going to the file `log_name` of `logs`, created afresh (a file or symbolic link already
// there is removed, never followed or truncated).
pid_t SpawnRun(const std::filesystem::path& executable, const std::filesystem::path& manifest, int index,
               const std::filesystem::path& out_dir, const std::string& checkpoint_every, const Subfolder& logs,
               const std::string& log_name) {
  const int log_descriptor = logs.CreateFreshFile(log_name);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log_descriptor, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_descriptor, STDERR_FILENO);
  // The child starts with default signal handling (the sweep's handlers are not inherited
  // through exec anyway; this also resets ignored ones).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, signal_number);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  const std::string index_text = std::to_string(index);
  std::vector<std::string> arguments = {
      executable.string(), "run",       "--manifest",     manifest.string(), "--index",
      index_text,          "--out-dir", out_dir.string(), "--quiet",         "--checkpoint-on-signal"};
  if (!checkpoint_every.empty()) {
    arguments.push_back("--checkpoint-every");
    arguments.push_back(checkpoint_every);
  }
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, executable.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(log_descriptor);
  if (error != 0) throw std::runtime_error("cannot start " + executable.string() + ": " + std::strerror(error));
  return pid;
}

std::string Seconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f s", seconds);
  return buffer;
}

double WallSeconds(const RunRecord& record, double fallback) {
  const auto found = record.summary.find("wall_s");
  if (found != record.summary.end()) {
    if (const auto* seconds = std::get_if<double>(&found->second)) return *seconds;
  }
  return fallback;
}

}  // namespace

int RunSweepLocally(const SweepDefinition& sweep, const LocalExecutorOptions& options) {
  if (options.jobs < 1) throw InputError("-j: must be at least 1, got " + std::to_string(options.jobs));
  if (options.threads_per_run < 0) throw InputError("--threads-per-run: must be >= 0");
  if (!options.checkpoint_every.empty()) ParseCheckpointInterval(options.checkpoint_every);
  std::vector<std::string> warnings;
  const std::vector<ManifestEntry> entries = ExpandSweep(sweep, &warnings);
  for (const std::string& warning : warnings)
    std::fprintf(stderr, "contactlab: sweep %s: %s\n", sweep.name.c_str(), warning.c_str());
  const std::filesystem::path out_dir = options.out_dir;
  const std::filesystem::path manifest = out_dir / "manifest.jsonl";
  const auto inputs = SweepInputs(sweep);
  RequireNotAnInput(manifest, "manifest", inputs);
  RequireNotAnInput(out_dir / "results.csv", "table", inputs);
  EnsureWritableFolder(out_dir, "output folder");
  // One sweep per folder at a time: two would rewrite each other's manifest and runs.
  const FolderLock lock(out_dir, "running a sweep");
  const Subfolder logs(out_dir, "logs", "log folder");
  WriteManifest(manifest, entries);
  InstallStopHandlers();

  // Threads: the runs share the cores unless the caller decided.
  if (options.threads_per_run > 0) {
    setenv("OMP_NUM_THREADS", std::to_string(options.threads_per_run).c_str(), 1);
  } else if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    setenv("OMP_NUM_THREADS", std::to_string(std::max(1, cores / options.jobs)).c_str(), 1);
  }
  // OMP_NUM_THREADS does not bind a `num_threads` clause: Debian's CHOLMOD (SuiteSparse 5)
  // runs its supernodal factorization with num_threads(4), fixed when it was compiled
  // (CHOLMOD_OMP_NUM_THREADS), so a "one-thread" sap or penalty run used four threads and
  // took cores from the runs beside it. OMP_THREAD_LIMIT bounds every parallel region of the
  // process; the runs get the same bound unless the caller set one.
  if (std::getenv("OMP_THREAD_LIMIT") == nullptr) setenv("OMP_THREAD_LIMIT", std::getenv("OMP_NUM_THREADS"), 1);
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe");
  const int total = static_cast<int>(entries.size());
  // The environment's values and the folder's name are escaped: a newline in them cannot split the line.
  std::fprintf(stderr,
               "contactlab: sweep %s: %d runs, %d at a time, OMP_NUM_THREADS=%s, OMP_THREAD_LIMIT=%s, into %s\n",
               sweep.name.c_str(), total, options.jobs, OneLine(std::getenv("OMP_NUM_THREADS")).c_str(),
               OneLine(std::getenv("OMP_THREAD_LIMIT")).c_str(), OneLine(out_dir.string()).c_str());

  // Runs already complete for the same configuration are not started again.
  std::deque<int> queue;
  std::map<int, std::string> skipped;
  for (const ManifestEntry& entry : entries) {
    bool complete = false;
    try {
      complete = IsRunComplete(out_dir, ResolveManifestEntry(entry));
    } catch (const InputError&) {
      complete = false;  // the child records the failure
    }
    if (complete) {
      skipped[entry.index] = LookupRecord(out_dir, entry).status;
    } else {
      queue.push_back(entry.index);
    }
  }
  if (!skipped.empty()) std::fprintf(stderr, "contactlab: %zu runs already complete: skipped\n", skipped.size());

  const auto sweep_start = Clock::now();
  std::map<pid_t, RunningChild> running;
  std::map<int, double> elapsed;
  int finished = static_cast<int>(skipped.size());
  while (!queue.empty() || !running.empty()) {
    // A stop signal goes to every running child (each removes its partial file and exits);
    // the sweep waits for them and then stops with the same signal.
    if (stop_signal != 0) {
      const int signal_number = stop_signal;
      for (const auto& [pid, child] : running) ::kill(pid, signal_number);
      for (const auto& [pid, child] : running) {
        int ignored = 0;
        while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
        }
      }
      std::fprintf(stderr, "contactlab: sweep %s: stopped by signal %d; %zu runs were stopped, %zu not started\n",
                   sweep.name.c_str(), signal_number, running.size(), queue.size());
      throw Interrupted(signal_number);
    }
    // Fill the free slots.
    while (!queue.empty() && static_cast<int>(running.size()) < options.jobs) {
      const int index = queue.front();
      queue.pop_front();
      const ManifestEntry& entry = entries[index];
      const std::string log_name = std::to_string(index) + "_" + entry.run_id + ".log";
      running[SpawnRun(executable, manifest, index, out_dir, options.checkpoint_every, logs, log_name)] = {
          index, Clock::now(), logs.path() / log_name};
    }
    // Wait for one child and record what it left. The wait polls (every 0.1 s) rather than
    // blocks, so a stop signal that lands just before it is still seen at once.
    int wait_status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &wait_status, WNOHANG)) == 0 && stop_signal == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid == 0) continue;  // a stop signal: handled at the top of the loop
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    const auto child = running.find(pid);
    if (child == running.end()) continue;
    const RunningChild done = child->second;
    running.erase(child);
    const ManifestEntry& entry = entries[done.index];
    const double seconds = std::chrono::duration<double>(Clock::now() - done.start).count();
    elapsed[done.index] = seconds;
    RunRecord record = LookupRecord(out_dir, entry);
    if (record.status == "missing") {
      // The child died without recording anything (a signal, an abort): record it here.
      const std::string why =
          WIFSIGNALED(wait_status)
              ? std::string("crashed: ") + strsignal(WTERMSIG(wait_status))
              : "exited with status " + std::to_string(WEXITSTATUS(wait_status)) + " without a record";
      WriteFailureRecord(out_dir, entry, why + " (log: " + done.log.string() + ")",
                         WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status));
      record = LookupRecord(out_dir, entry);
    }
    ++finished;
    std::fprintf(stderr, "[%*d/%d] %-8s %9s  %s %s%s%s\n", static_cast<int>(std::to_string(total).size()), finished,
                 total, OneLine(record.status).c_str(), Seconds(seconds).c_str(), entry.formulation.c_str(),
                 DescribeSwept(entry).c_str(), record.status == "ok" ? "" : "  -- ",
                 record.status == "ok" ? "" : OneLine(record.message.substr(0, 160)).c_str());
  }
  const double sweep_seconds = std::chrono::duration<double>(Clock::now() - sweep_start).count();

  // The final table, and results.csv beside the runs.
  const CollectedTable table = CollectRuns(out_dir);
  std::map<std::string, int> counts;
  std::printf("%5s  %-12s  %-15s  %-40s  %-8s  %9s\n", "index", "run_id", "formulation", "swept", "status", "wall");
  for (const CollectedRun& run : table.runs) {
    // The table reads the folder's manifest again, which may have been replaced while the
    // sweep ran: its indices name this sweep's runs only where they match one.
    const int index = run.index.value_or(-1);
    const bool own_run = index >= 0 && index < total && entries[index].run_id == run.run_id;
    const auto seconds = own_run ? elapsed.find(index) : elapsed.end();
    const std::string wall = own_run && skipped.count(index)
                                 ? "skipped"
                                 : Seconds(WallSeconds(run.record, seconds != elapsed.end() ? seconds->second : 0.0));
    const std::string swept = own_run ? DescribeSwept(entries[index]) : "(not a run of this sweep)";
    std::printf("%5d  %-12s  %-15s  %-40s  %-8s  %9s\n", index, OneLine(run.run_id).c_str(),
                OneLine(run.formulation).c_str(), OneLine(swept).c_str(), OneLine(run.record.status).c_str(),
                wall.c_str());
    counts[run.record.status]++;
  }
  std::ostringstream csv;
  WriteCsv(table, csv);
  WriteFileAtomically(out_dir / "results.csv", csv.str());
  std::string tally;
  for (const auto& [status, count] : counts)
    tally += (tally.empty() ? "" : ", ") + std::to_string(count) + " " + status;
  std::printf("sweep %s: %s in %s with -j %d; table: %s\n", sweep.name.c_str(), tally.c_str(),
              Seconds(sweep_seconds).c_str(), options.jobs, (out_dir / "results.csv").string().c_str());
  return total - counts["ok"];
}

}  // namespace contactlab::experiments
