#include "app/headless.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "app/event_render.h"
#include "specs/spec.h"

namespace mrcnn::app {
namespace {

volatile pid_t g_child = 0;

void forwardSignal(int sig, siginfo_t* info, void*) {
  // The terminal sends Ctrl-C to the whole process group, the engine included: such a
  // signal (si_code SI_KERNEL) is not passed on, or the engine would count two and stop at
  // once instead of gracefully. A signal sent to the launcher alone by a process (kill, a
  // service manager: si_code <= 0) is passed on.
  const pid_t child = g_child;
  if (child > 0 && (info == nullptr || info->si_code <= 0)) ::kill(child, sig);
}

// Writes all of `text` to stdout (the terminal or a pipe).
void put(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stdout is gone: keep running the engine to its end
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// The spec's report_frequency (with the --set overrides) sets how often the terminal gets a
// line of the loss components; a spec that does not load keeps the default (the engine
// reports what is wrong with it).
RenderOptions renderOptions(const std::string& spec, const std::vector<std::string>& overrides) {
  RenderOptions o;
  if (!spec.empty()) {
    try {
      const spec::LoadedSpec loaded = spec::loadSpecFile(spec, overrides);
      if (loaded.spec.report_frequency() > 0)
        o.loss_every_steps = static_cast<int>(loaded.spec.report_frequency());
    } catch (const std::exception&) {
    }
  }
  o.tty = ::isatty(STDOUT_FILENO) == 1;
  winsize ws{};
  if (o.tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) o.width = ws.ws_col;
  return o;
}

std::filesystem::path findEngine(const std::string& self) {
  if (const char* env = std::getenv("MRCNN_ENGINE"); env && *env) return env;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) exe = std::filesystem::absolute(self);
  return exe.parent_path() / "mrcnn-engine";
}

constexpr const char* kUsage =
    "usage: mrcnn-workbench --headless SPEC [--task TASK] [--set path.to.field=value]... "
    "[--run-dir DIR]\n"
    "       mrcnn-workbench --headless SPEC --task evaluate [--checkpoint FILE] [--run-dir DIR]\n"
    "       mrcnn-workbench --headless SPEC --task inference --images FILE_OR_DIR [--out DIR] "
    "[--checkpoint FILE]\n"
    "       mrcnn-workbench --headless --task evaluate --annotations GT.json --results DT.json "
    "[--iou-type bbox|segm|both] [--metrics-out M.json]\n"
    "       mrcnn-workbench --headless --task dataset_convert --image-dir DIR --annotations F.json "
    "--output-dir DIR [--tag TAG] [--num-shards N] [--include-mask true|false]\n"
    "tasks: train (default), validate, evaluate, inference, dataset_convert, prune, export\n";

}  // namespace

int runHeadless(const std::vector<std::string>& args, const std::string& self) {
  std::vector<std::string> engine_args;
  bool have_spec = false;
  std::string spec_path;
  std::vector<std::string> overrides;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (!a.empty() && a[0] == '-') {
      engine_args.push_back(a);
      // Every option but these flags takes a value, which goes along (the engine checks
      // the names).
      const bool flag = a == "--version" || a.find('=') != std::string::npos;
      if (!flag && i + 1 < args.size()) {
        engine_args.push_back(args[++i]);
        if (a == "--spec") {
          have_spec = true;
          spec_path = args[i];
        }
        if (a == "--set") overrides.push_back(args[i]);
      } else if (a.starts_with("--set=")) {
        overrides.push_back(a.substr(6));
      } else if (a.starts_with("--spec=")) {
        have_spec = true;
        spec_path = a.substr(7);
      }
    } else if (!have_spec) {
      engine_args.insert(engine_args.begin(), {"--spec", a});
      have_spec = true;
      spec_path = a;
    } else {
      std::cerr << "mrcnn-workbench: unexpected argument \"" << a << "\"\n" << kUsage;
      return 2;
    }
  }

  const std::filesystem::path engine = findEngine(self);
  if (::access(engine.c_str(), X_OK) != 0) {
    std::cerr << "mrcnn-workbench: cannot run the engine " << engine.string() << ": "
              << std::strerror(errno) << " (set MRCNN_ENGINE to its path)\n";
    return 1;
  }

  std::vector<char*> argv;
  std::string engine_str = engine.string();
  argv.push_back(engine_str.data());
  for (auto& a : engine_args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  struct sigaction action {};
  action.sa_sigaction = forwardSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  // The engine's stdout comes through a pipe to be rendered; its stderr goes straight on.
  int out_pipe[2];
  if (::pipe(out_pipe) != 0) {
    std::cerr << "mrcnn-workbench: cannot start the engine: " << std::strerror(errno) << '\n';
    return 1;
  }
  std::cout.flush();

  const pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "mrcnn-workbench: cannot start the engine: " << std::strerror(errno) << '\n';
    return 1;
  }
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    ::execv(argv[0], argv.data());
    std::cerr << "mrcnn-workbench: cannot start " << argv[0] << ": " << std::strerror(errno)
              << '\n';
    ::_exit(127);
  }
  g_child = pid;
  ::close(out_pipe[1]);
  // A launcher whose terminal went away goes on reading, so the engine is not killed by
  // SIGPIPE through us.
  ::signal(SIGPIPE, SIG_IGN);

  EventRenderer renderer(renderOptions(spec_path, overrides));
  std::string pending;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      std::string_view line(pending.data() + start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      put(renderer.line(line));
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) put(renderer.line(pending));  // a last line without its newline
  ::close(out_pipe[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "mrcnn-workbench: lost the engine: " << std::strerror(errno) << '\n';
      return 1;
    }
  }
  g_child = 0;
  int code = 1;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    code = 128 + WTERMSIG(status);
  }
  put(renderer.finish(code));
  if (WIFSIGNALED(status)) {
    std::cerr << "mrcnn-workbench: the engine was killed by signal " << WTERMSIG(status) << " ("
              << ::strsignal(WTERMSIG(status)) << ")\n";
  }
  return code;
}

}  // namespace mrcnn::app
