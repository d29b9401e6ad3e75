#include "remote/remote_run.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "remote/ssh_command.h"

namespace mrcnn::remote {
namespace {

// ssh's exit status when the connection itself failed (the remote command's otherwise).
constexpr int kSshFailed = 255;

// The last `lines` lines of text (trailing newlines dropped), for a message.
std::string lastLines(const std::string& text, size_t lines) {
  const size_t last = text.find_last_not_of('\n');
  if (last == std::string::npos) return "";
  const size_t end = last + 1;
  size_t start = end;
  for (size_t n = 0; start > 0; --start) {
    if (text[start - 1] == '\n' && ++n == lines) break;
  }
  return text.substr(start, end - start);
}

ChildResult ssh(const Host& host, const std::vector<std::string>& remote_argv, std::string_view input = {}) {
  return runChild(sshArgv(host, remote_argv), input);
}

[[noreturn]] void failed(const Host& host, const std::string& what, const ChildResult& r) {
  std::string why = lastLines(r.err, 3);
  if (why.empty()) why = "exit code " + std::to_string(r.exit_code);
  throw RemoteError(host.name + " (" + host.destination + "): " + what + ": " + why);
}

// The scripts run on the host: fixed text, every value a positional argument.
constexpr const char* kUpload = "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"";
constexpr const char* kStart =
    "mkdir -p \"$1\" && cd \"$1\" || exit 1\n"
    "shift\n"
    "rm -f engine.exit engine.pid\n"
    "setsid nohup sh -c '\"$@\" > engine.log 2>&1 < /dev/null & echo $! > engine.pid; wait $!; "
    "echo $? > engine.exit' sh \"$@\" > /dev/null 2>&1 < /dev/null &\n"
    "echo $!\n";
constexpr const char* kStop = "kill -TERM \"$(cat \"$1/engine.pid\")\"";
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

int64_t startOnHost(const Host& host, const RemoteRun& run, const std::vector<std::string>& args) {
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
    return std::stoll(r.out);
  } catch (const std::exception&) {
    throw RemoteError(host.name + ": the start on the host said \"" + lastLines(r.out, 1) +
                      "\", not the id of the process");
  }
}

FollowResult followOnHost(const Host& host, const RemoteRun& run, int64_t waiter, FollowOptions& options) {
  FollowResult result;
  result.offset = options.offset;
  int delay = 1;
  auto failing_since = std::chrono::steady_clock::now();
  bool failing = false;
  for (;;) {
    // From the first byte not yet had; tail ends once the waiting process has ended (and
    // what the file then holds is read).
    const std::vector<std::string> tail = {"tail", "-c", "+" + std::to_string(result.offset + 1),
                                           "--pid=" + std::to_string(waiter), "-F",
                                           run.run_dir + "/events.jsonl"};
    const ChildResult r = streamChild(
        sshArgv(host, tail),
        [&](std::string_view line) {
          result.offset += line.size() + 1;
          failing = false;
          delay = 1;
          if (options.on_event) options.on_event(line);
        },
        [&] {
          if (options.on_idle) options.on_idle();
          return false;
        });
    if (r.exit_code == 0) break;
    if (r.exit_code != kSshFailed) {
      // tail gives up when the file never came (an engine that ended before writing an
      // event): an ended run is read below; anything else is an error.
      const ChildResult ended = ssh(host, {"test", "-e", run.run_dir + "/engine.exit"});
      if (ended.exit_code == 0) break;
      failed(host, "cannot follow " + run.run_dir + "/events.jsonl", r);
    }
    // The link dropped (or never came): try again, waiting longer each time.
    if (!failing) {
      failing = true;
      failing_since = std::chrono::steady_clock::now();
    }
    const auto waited = std::chrono::steady_clock::now() - failing_since;
    if (waited > std::chrono::seconds(options.give_up_after_seconds)) {
      failed(host, "no connection for " + std::to_string(options.give_up_after_seconds) +
                       " s (the run goes on there; the same command follows it again)", r);
    }
    if (options.on_notice) {
      options.on_notice("the connection to " + host.name + " dropped (" + lastLines(r.err, 1) +
                        "): trying again in " + std::to_string(delay) + " s; " +
                        std::to_string(result.offset) + " bytes of events had");
    }
    for (int waited_s = 0; waited_s < delay * 5; ++waited_s) {
      if (options.on_idle) options.on_idle();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    delay = std::min(delay * 2, 30);
  }
  // How the engine ended.
  const ChildResult ended = ssh(host, {"sh", "-c", kEnded, "sh", run.run_dir});
  if (ended.exit_code != 0) failed(host, "cannot read how the engine ended", ended);
  const std::string first = ended.out.substr(0, ended.out.find('\n'));
  try {
    result.exit_code = first == "none" ? -1 : std::stoi(first);
  } catch (const std::exception&) {
    result.exit_code = -1;
  }
  if (result.exit_code != 0) result.log_tail = ended.out.substr(std::min(ended.out.size(), first.size() + 1));
  return result;
}

void stopOnHost(const Host& host, const RemoteRun& run) {
  const ChildResult r = ssh(host, {"sh", "-c", kStop, "sh", run.run_dir});
  if (r.exit_code != 0) failed(host, "cannot stop the engine of " + run.run_dir, r);
}

void bringBack(const Host& host, const RemoteRun& run, const std::string& local_dir) {
  std::error_code ec;
  std::filesystem::create_directories(local_dir, ec);
  const ChildResult r = runChild(rsyncArgv(host, run.run_dir, local_dir));
  if (r.exit_code != 0) failed(host, "cannot bring " + run.run_dir + " back into " + local_dir, r);
}

}  // namespace mrcnn::remote
