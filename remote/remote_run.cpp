#include "remote/remote_run.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "remote/slurm_job.h"
#include "remote/ssh_command.h"

namespace mrcnn::remote {
namespace {

// ssh's exit status when the connection itself failed (the remote command's otherwise).
constexpr int kSshFailed = 255;

ChildResult ssh(const Host& host, const std::vector<std::string>& remote_argv, std::string_view input = {}) {
  return runOnHost(host, remote_argv, input);
}

[[noreturn]] void failed(const Host& host, const std::string& what, const ChildResult& r) {
  throwRemote(host, what, r);
}

// The scripts run on the host: fixed text, every value a positional argument.
constexpr const char* kUpload = "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"";
constexpr const char* kStart =
    "mkdir -p \"$1\" && cd \"$1\" || exit 1\n"
    "shift\n"
    "rm -f engine.exit engine.pid engine.waiter engine.job\n"
    "setsid nohup sh -c '\"$@\" > engine.log 2>&1 < /dev/null & echo $! > engine.pid; wait $!; "
    "echo $? > engine.exit' sh \"$@\" > /dev/null 2>&1 < /dev/null &\n"
    "echo $! > engine.waiter\n"
    "echo $!\n";
// Whether a run there is still going: "pid <waiter>" or "job <id>", nothing otherwise.
constexpr const char* kRunning =
    "cd \"$1\" 2>/dev/null || exit 0\n"
    "[ -e engine.exit ] && exit 0\n"
    "if [ -s engine.job ]; then\n"
    "  [ -n \"$(\"$2\" -h -j \"$(cat engine.job)\" -o %T 2>/dev/null)\" ] && echo \"job $(cat engine.job)\"\n"
    "elif [ -s engine.waiter ] && kill -0 \"$(cat engine.waiter)\" 2>/dev/null; then\n"
    "  echo \"pid $(cat engine.waiter)\"\n"
    "fi\n"
    "exit 0\n";
constexpr const char* kStop = "kill -TERM \"$(cat \"$1/engine.pid\")\"";
constexpr const char* kCancel = "\"$1\" --signal=TERM \"$(cat \"$2/engine.job\")\"";
// A job's events: tail follows the file while squeue still knows the job.
constexpr const char* kTailJob =
    "tail -c +\"$1\" -F \"$2\" & t=$!\n"
    "while [ -n \"$(\"$3\" -h -j \"$4\" -o %T 2>/dev/null)\" ]; do sleep 5; done\n"
    "sleep 2; kill $t 2>/dev/null; wait $t 2>/dev/null; exit 0\n";
constexpr const char* kEnded = "cat \"$1/engine.exit\" 2>/dev/null || echo none; tail -c 4000 \"$1/engine.log\" 2>/dev/null";

}  // namespace

RemoteRun remoteRun(const Host& host, const std::string& spec_file_name, const std::string& run_name) {
  std::string work = host.work_dir;
  while (work.size() > 1 && work.back() == '/') work.pop_back();
  return {work + "/" + spec_file_name, work + "/runs/" + run_name};
}

void uploadFile(const Host& host, const std::string& remote_path, std::string_view text) {
  const ChildResult r = ssh(host, {"sh", "-c", kUpload, "sh", remote_path}, text);
  if (r.exit_code != 0) failed(host, "cannot write " + remote_path, r);
}

ChildResult validateOnHost(const Host& host, const RemoteRun& run, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {host.engine, "--spec", run.spec, "--task", "validate"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildResult r = ssh(host, argv);
  if (r.exit_code == kSshFailed) failed(host, "cannot connect", r);
  if (r.exit_code == 126 || r.exit_code == 127) {
    failed(host, "the engine " + host.engine + " cannot run there (the host's \"engine\" in the hosts file)", r);
  }
  return r;
}

Waiter startOnHost(const Host& host, const RemoteRun& run, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"sh", "-c", kStart, "sh", run.run_dir};
  if (host.nproc_per_node > 1) {
    // The ranks of a data-parallel run: the launcher installed beside the engine starts them
    // (and passes a stop on to each).
    const std::string folder = host.engine.substr(0, host.engine.rfind('/') + 1);
    argv.insert(argv.end(), {folder + "mrcnn-workbench", "--headless", "--raw-events", "--nproc-per-node",
                             std::to_string(host.nproc_per_node)});
  } else {
    argv.push_back(host.engine);
  }
  argv.insert(argv.end(), {"--spec", run.spec, "--run-dir", run.run_dir});
  argv.insert(argv.end(), args.begin(), args.end());
  const ChildResult r = ssh(host, argv);
  if (r.exit_code != 0) failed(host, "cannot start the engine in " + run.run_dir, r);
  try {
    return Waiter{std::stoll(r.out), ""};
  } catch (const std::exception&) {
    throw RemoteError(host.name + ": the start on the host said \"" + lastLines(r.out, 1) +
                      "\", not the id of the process");
  }
}

namespace {

// Waits `seconds`, asking on_idle a few times a second.
void pause(FollowOptions& options, int seconds) {
  for (int i = 0; i < seconds * 5; ++i) {
    if (options.on_idle) options.on_idle();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// A job in the queue: its state and reason whenever they change, until it runs or ends.
void waitWhileQueued(const Host& host, const std::string& job, FollowOptions& options) {
  std::string shown;
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  for (;;) {
    JobState state;
    try {
      state = jobState(host, job);
      failing_since.reset();
    } catch (const RemoteError& e) {
      // A dropped link while the job waits: asked again, as the following retries.
      const auto now = std::chrono::steady_clock::now();
      if (!failing_since) failing_since = now;
      if (now - *failing_since > std::chrono::seconds(options.give_up_after_seconds)) throw;
      if (options.on_notice) options.on_notice(std::string(e.what()) + ": trying again in 5 s");
      pause(options, 5);
      continue;
    }
    const bool reason = !state.reason.empty() && state.reason != "None";
    const std::string now = state.state + (reason ? " (" + state.reason + ")" : "");
    if (now != shown && !state.state.empty() && options.on_notice)
      options.on_notice("job " + job + " on " + host.name + ": " + now);
    shown = now;
    if (state.state != "PENDING" && state.state != "CONFIGURING") return;
    pause(options, 5);
  }
}

// The remote command that follows events.jsonl from byte `offset` until the run has ended.
std::vector<std::string> tailCommand(const Host& host, const RemoteRun& run, const Waiter& waiter,
                                     uint64_t offset) {
  const std::string from = std::to_string(offset + 1);
  const std::string events = run.run_dir + "/events.jsonl";
  if (waiter.job.empty()) return {"tail", "-c", "+" + from, "--pid=" + std::to_string(waiter.pid), "-F", events};
  return {"sh", "-c", kTailJob, "sh", from, events, slurmCommand(host, "squeue"), waiter.job};
}

// engine.exit (-1 when there is none: a job cancelled or out of time) and, when it is not 0,
// the end of engine.log.
int exitCode(const Host& host, const RemoteRun& run, std::string* log_tail) {
  const ChildResult ended = ssh(host, {"sh", "-c", kEnded, "sh", run.run_dir});
  if (ended.exit_code != 0) failed(host, "cannot read how the engine ended", ended);
  const std::string first = ended.out.substr(0, ended.out.find('\n'));
  int code = -1;
  try {
    code = first == "none" ? -1 : std::stoi(first);
  } catch (const std::exception&) {
  }
  if (code != 0) *log_tail = ended.out.substr(std::min(ended.out.size(), first.size() + 1));
  return code;
}

}  // namespace

FollowResult followOnHost(const Host& host, const RemoteRun& run, const Waiter& waiter, FollowOptions& options) {
  FollowResult result;
  result.offset = options.offset;
  if (!waiter.job.empty()) waitWhileQueued(host, waiter.job, options);
  const auto hand_over = [&](std::string_view line) {
    result.offset += line.size() + 1;
    if (options.on_event) options.on_event(line);
  };
  int delay = 1;
  auto failing_since = std::chrono::steady_clock::now();
  bool failing = false;
  for (;;) {
    const ChildResult r = streamChild(
        sshArgv(host, tailCommand(host, run, waiter, result.offset)),
        [&](std::string_view line) {
          failing = false;
          delay = 1;
          hand_over(line);
        },
        [&] {
          if (options.on_idle) options.on_idle();
          return false;
        });
    if (r.exit_code == 0) break;
    if (r.exit_code != kSshFailed) {
      // tail gives up when the file never came (an engine that ended before writing an
      // event): an ended run is read below; anything else is an error.
      if (ssh(host, {"test", "-e", run.run_dir + "/engine.exit"}).exit_code == 0) break;
      failed(host, "cannot follow " + run.run_dir + "/events.jsonl", r);
    }
    // The link dropped (or never came): try again, waiting longer each time.
    if (!failing) failing_since = std::chrono::steady_clock::now();
    failing = true;
    if (std::chrono::steady_clock::now() - failing_since > std::chrono::seconds(options.give_up_after_seconds)) {
      failed(host, "no connection for " + std::to_string(options.give_up_after_seconds) +
                       " s (the run goes on there; the same command follows it again)", r);
    }
    if (options.on_notice) {
      options.on_notice("the connection to " + host.name + " dropped (" + lastLines(r.err, 1) +
                        "): trying again in " + std::to_string(delay) + " s; " +
                        std::to_string(result.offset) + " bytes of events had");
    }
    pause(options, delay);
    delay = std::min(delay * 2, 30);
  }
  // What the file holds past the followed part (the last lines written as the run ended).
  const std::string events = run.run_dir + "/events.jsonl";
  const ChildResult rest = streamChild(sshArgv(host, {"tail", "-c", "+" + std::to_string(result.offset + 1), events}),
                                       hand_over);
  if (rest.exit_code == kSshFailed) failed(host, "cannot read the end of " + events, rest);
  result.exit_code = exitCode(host, run, &result.log_tail);
  return result;
}

std::optional<Waiter> runningOnHost(const Host& host, const RemoteRun& run) {
  const ChildResult r = ssh(host, {"sh", "-c", kRunning, "sh", run.run_dir, slurmCommand(host, "squeue")});
  if (r.exit_code != 0) failed(host, "cannot tell whether " + run.run_dir + " is running", r);
  const std::string line = lastLines(r.out, 1);
  try {
    if (line.rfind("pid ", 0) == 0) return Waiter{std::stoll(line.substr(4)), ""};
  } catch (const std::exception&) {
  }
  if (line.rfind("job ", 0) == 0) return Waiter{0, line.substr(4)};
  return std::nullopt;
}

uint64_t eventsSize(const Host& host, const RemoteRun& run) {
  const ChildResult r = ssh(host, {"sh", "-c", "wc -c < \"$1\" 2>/dev/null || echo 0", "sh",
                                   run.run_dir + "/events.jsonl"});
  if (r.exit_code != 0) failed(host, "cannot read the size of " + run.run_dir + "/events.jsonl", r);
  try {
    return std::stoull(r.out);
  } catch (const std::exception&) {
    return 0;
  }
}

void stopOnHost(const Host& host, const RemoteRun& run) {
  const ChildResult r = host.kind == "slurm"
                            ? ssh(host, {"sh", "-c", kCancel, "sh", slurmCommand(host, "scancel"), run.run_dir})
                            : ssh(host, {"sh", "-c", kStop, "sh", run.run_dir});
  if (r.exit_code != 0) failed(host, "cannot stop the engine of " + run.run_dir, r);
}

void bringBack(const Host& host, const RemoteRun& run, const std::string& local_dir) {
  std::error_code ec;
  std::filesystem::create_directories(local_dir, ec);
  const ChildResult r = runChild(rsyncArgv(host, run.run_dir, local_dir));
  if (r.exit_code != 0) failed(host, "cannot bring " + run.run_dir + " back into " + local_dir, r);
}

}  // namespace mrcnn::remote
