#include "app/headless.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace mrcnn::app {
namespace {

volatile pid_t g_child = 0;

void forwardSignal(int sig) {
  // The terminal sends Ctrl-C to the whole process group, the engine included; a signal
  // sent to the launcher alone (kill, a service manager) is passed on here.
  const pid_t child = g_child;
  if (child > 0) ::kill(child, sig);
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
    "       mrcnn-workbench --headless --task evaluate --annotations GT.json --results DT.json "
    "[--iou-type bbox|segm|both] [--metrics-out M.json]\n"
    "       mrcnn-workbench --headless --task dataset_convert --image-dir DIR --annotations F.json "
    "--output-dir DIR [--tag TAG] [--num-shards N] [--include-mask true|false]\n"
    "tasks: train (default), validate, evaluate, inference, dataset_convert, prune, export\n";

}  // namespace

int runHeadless(const std::vector<std::string>& args, const std::string& self) {
  std::vector<std::string> engine_args;
  bool have_spec = false;
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
        if (a == "--spec") have_spec = true;
      }
    } else if (!have_spec) {
      engine_args.insert(engine_args.begin(), {"--spec", a});
      have_spec = true;
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
  action.sa_handler = forwardSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "mrcnn-workbench: cannot start the engine: " << std::strerror(errno) << '\n';
    return 1;
  }
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    std::cerr << "mrcnn-workbench: cannot start " << argv[0] << ": " << std::strerror(errno)
              << '\n';
    ::_exit(127);
  }
  g_child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "mrcnn-workbench: lost the engine: " << std::strerror(errno) << '\n';
      return 1;
    }
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    std::cerr << "mrcnn-workbench: the engine was killed by signal " << WTERMSIG(status) << " ("
              << ::strsignal(WTERMSIG(status)) << ")\n";
    return 128 + WTERMSIG(status);
  }
  return 1;
}

}  // namespace mrcnn::app
