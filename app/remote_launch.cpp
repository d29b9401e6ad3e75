#include "app/remote_launch.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <variant>

#include "io/atomic_file.h"
#include "io/json_writer.h"
#include "remote/hosts.h"
#include "remote/remote_run.h"
#include "remote/slurm_job.h"
#include "specs/spec.h"

namespace mrcnn::app {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop_requested{false};

void onStopSignal(int) { g_stop_requested = true; }

void put(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// The host of the hosts file, or nullopt after saying why not.
std::optional<remote::Host> findHost(const std::string& name) {
  const fs::path path = remote::defaultHostsPath();
  remote::HostsFile hosts;
  try {
    hosts = remote::loadHosts(path);
  } catch (const remote::HostsError& e) {
    std::cerr << "mrcnn-workbench: " << e.what() << '\n';
    return std::nullopt;
  }
  if (const remote::Host* host = hosts.find(name)) return *host;
  std::string known;
  for (const remote::Host& h : hosts.hosts) known += (known.empty() ? "" : ", ") + h.name;
  std::cerr << "mrcnn-workbench: --host " << name << ": no such host in " << path.string() << " ("
            << (known.empty() ? "it names none" : "it names " + known) << ")\n";
  return std::nullopt;
}

// The data and weights files the spec names that are not on the host (relative paths taken
// from the work folder, where the spec is): one "SPEC: error: FIELD: ..." line each, the form
// of the engine's own messages, which the GUI lists with the spec's problems.
std::string missingOnHost(const remote::Host& host, const remote::RemoteRun& run, const spec::LoadedSpec& loaded,
                          const std::string& spec_path) {
  const auto& d = loaded.spec.data_config();
  std::vector<std::pair<std::string, std::string>> named;
  if (!d.has_shapes_dataset()) {
    named = {{"data_config.train_image_dir", d.train_image_dir()}, {"data_config.train_json_file", d.train_json_file()},
             {"data_config.val_image_dir", d.val_image_dir()}, {"data_config.val_json_file", d.val_json_file()}};
  }
  const std::string& checkpoint = loaded.spec.checkpoint();
  if (checkpoint.find(':') == std::string::npos) named.emplace_back("checkpoint", checkpoint);
  std::vector<std::string> argv = {"sh", "-c", "cd \"$1\" || exit 1; shift; for p; do [ -e \"$p\" ] || echo \"$p\"; done",
                                   "sh", run.spec.substr(0, run.spec.rfind('/'))};
  std::vector<std::pair<std::string, std::string>> asked;
  for (const auto& [field, path] : named) {
    if (path.empty()) continue;
    argv.push_back(path);
    asked.emplace_back(field, path);
  }
  if (asked.empty()) return {};
  const remote::ChildResult r = remote::runOnHost(host, argv);
  if (r.exit_code != 0) remote::throwRemote(host, "cannot look for the spec's files", r);
  std::string report;
  for (const auto& [field, path] : asked) {
    if (("\n" + r.out).find("\n" + path + "\n") == std::string::npos) continue;
    report += spec_path + ": error: " + field + ": no such file or folder on " + host.name + ": " + path + "\n";
  }
  return report;
}

// Puts the spec there, has the host's engine check it, starts the engine or submits the job.
// The waiter, or the exit code when the spec does not run there.
std::variant<remote::Waiter, int> startThere(const remote::Host& host, const remote::RemoteRun& run,
                                             const HostLaunch& launch, const spec::LoadedSpec& loaded,
                                             const std::string& spec_text) {
  remote::uploadFile(host, run.spec, spec_text);
  std::vector<std::string> set_args;
  for (const std::string& o : launch.overrides) set_args.insert(set_args.end(), {"--set", o});
  const remote::ChildResult checked = remote::validateOnHost(host, run, set_args);
  if (checked.exit_code != 0) {
    std::cerr << checked.out << checked.err;
    std::cerr << "mrcnn-workbench: the spec does not run on " << host.name << " as it is (" << run.spec
              << "; paths in it are the host's)\n";
    return checked.exit_code;
  }
  const std::string missing = missingOnHost(host, run, loaded, launch.spec_path);
  if (!missing.empty()) {
    std::cerr << missing << "mrcnn-workbench: the data the spec names is not on " << host.name
              << " (relative paths are taken from " << run.spec.substr(0, run.spec.rfind('/'))
              << " there)\n";
    return 4;
  }
  if (host.kind == "slurm") {
    const std::string script = remote::batchScript(host, run, launch.engine_args);
    std::cerr << "mrcnn-workbench: the batch script for " << host.name << " (kept as " << run.run_dir
              << "/job.sbatch):\n"
              << script;
    remote::Waiter waiter;
    waiter.job = remote::submitJob(host, run, script);
    std::cerr << "mrcnn-workbench: submitted to " << host.name << " as job " << waiter.job
              << "; following it (Ctrl-C cancels it gracefully, closing this leaves it queued)\n";
    return waiter;
  }
  const remote::Waiter waiter = remote::startOnHost(host, run, launch.engine_args);
  std::cerr << "mrcnn-workbench: started on " << host.name << " in " << run.run_dir
            << "; following it (Ctrl-C stops it there, closing this leaves it running)\n";
  return waiter;
}

// Follows the run to its end, rendering (or passing on) its events; Ctrl-C and SIGTERM become
// the engine's graceful stop there.
remote::FollowResult follow(const remote::Host& host, const remote::RemoteRun& run,
                            const remote::Waiter& waiter, uint64_t offset, const HostLaunch& launch,
                            EventRenderer& renderer) {
  struct sigaction action {}, old_int {}, old_term {};
  action.sa_handler = onStopSignal;
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  g_stop_requested = false;
  bool stop_sent = false;
  remote::FollowOptions options;
  options.offset = offset;
  options.on_event = [&](std::string_view line) {
    if (!launch.raw_events) {
      put(renderer.line(line));
      return;
    }
    put(line);
    put("\n");
  };
  options.on_notice = [](const std::string& notice) { std::cerr << "mrcnn-workbench: " << notice << '\n'; };
  options.on_idle = [&] {
    if (!g_stop_requested || stop_sent) return;
    stop_sent = true;
    std::cerr << "mrcnn-workbench: asking the engine on " << host.name << " to stop\n";
    try {
      remote::stopOnHost(host, run);
    } catch (const remote::RemoteError& e) {
      std::cerr << "mrcnn-workbench: " << e.what() << '\n';
    }
  };
  struct Restore {
    struct sigaction* interrupt;
    struct sigaction* terminate;
    ~Restore() {
      ::sigaction(SIGINT, interrupt, nullptr);
      ::sigaction(SIGTERM, terminate, nullptr);
    }
  } restore{&old_int, &old_term};
  return remote::followOnHost(host, run, waiter, options);
}

}  // namespace

int runOnHost(const HostLaunch& launch) {
  const std::optional<remote::Host> host = findHost(launch.host);
  if (!host) return 2;

  // The run's name and where it comes back, from the spec as a local run would have them.
  const spec::LoadedSpec loaded = spec::loadSpecFile(launch.spec_path, launch.overrides);
  std::ifstream in(launch.spec_path, std::ios::binary);
  if (!in) {
    std::cerr << "mrcnn-workbench: " << launch.spec_path << ": cannot read the spec\n";
    return 3;
  }
  std::ostringstream text;
  text << in.rdbuf();
  const std::string run_name = loaded.resolved.run_name.empty()
                                   ? fs::path(launch.spec_path).stem().string()
                                   : loaded.resolved.run_name;
  const std::string local_dir = !launch.local_run_dir.empty()
                                    ? launch.local_run_dir
                                    : (loaded.resolved.output_dir / run_name).string();
  const remote::RemoteRun run =
      remote::remoteRun(*host, fs::path(launch.spec_path).filename().string(), run_name);
  // The local run directory remembers where its run is (the GUI's Resume of a run reopened
  // later goes back there, and then follows it when it is still going).
  try {
    fs::create_directories(local_dir);
    std::ostringstream where;
    {
      io::JsonWriter w(where);
      w.beginObject()
          .key("host").value(host->name)
          .key("spec").value(fs::absolute(launch.spec_path).lexically_normal().string())
          .key("run_dir").value(run.run_dir)
          .endObject();
    }
    io::writeFileAtomic(fs::path(local_dir) / "remote.json", where.str() + "\n");
  } catch (const std::exception& e) {
    std::cerr << "mrcnn-workbench: " << local_dir << ": " << e.what() << '\n';
    return 4;
  }

  if (launch.bring_back_only) {
    try {
      remote::bringBack(*host, run, local_dir);
    } catch (const remote::RemoteError& e) {
      std::cerr << "mrcnn-workbench: " << e.what() << '\n';
      return 1;
    }
    std::cerr << "mrcnn-workbench: " << run.run_dir << " on " << host->name << " brought back into "
              << local_dir << '\n';
    return 0;
  }

  EventRenderer renderer(launch.render);
  int exit_code = 1;
  try {
    // Still going there (this command's terminal closed earlier): followed from its first
    // event, not started twice. Else started, and only its new events shown (a resume).
    remote::Waiter waiter;
    uint64_t offset = 0;
    if (const std::optional<remote::Waiter> running = remote::runningOnHost(*host, run)) {
      waiter = *running;
      std::cerr << "mrcnn-workbench: " << run.run_dir << " is still running on " << host->name
                << (waiter.job.empty() ? "" : " as job " + waiter.job) << ": following it\n";
    } else {
      offset = remote::eventsSize(*host, run);
      const std::variant<remote::Waiter, int> started = startThere(*host, run, launch, loaded, text.str());
      if (const int* code = std::get_if<int>(&started)) return *code;
      waiter = std::get<remote::Waiter>(started);
    }
    const remote::FollowResult ended = follow(*host, run, waiter, offset, launch, renderer);
    exit_code = ended.exit_code < 0 ? 1 : ended.exit_code;
    if (ended.exit_code < 0) {
      std::cerr << "mrcnn-workbench: the engine on " << host->name
                << " ended without an exit code (a job cancelled or out of time?): see "
                << run.run_dir << "/engine.log\n";
    }
    if (exit_code != 0 && !ended.log_tail.empty()) std::cerr << ended.log_tail;
    remote::bringBack(*host, run, local_dir);
    std::cerr << "mrcnn-workbench: " << run.run_dir << " on " << host->name << " brought back into "
              << local_dir << '\n';
  } catch (const remote::RemoteError& e) {
    if (!launch.raw_events) put(renderer.finish(1));
    std::cerr << "mrcnn-workbench: " << e.what() << '\n';
    return 1;
  }
  if (!launch.raw_events) put(renderer.finish(exit_code));
  return exit_code;
}

}  // namespace mrcnn::app
