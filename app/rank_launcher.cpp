#include "app/rank_launcher.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace mrcnn::app {
namespace {

constexpr int kMaxRanks = 1024;
volatile pid_t g_children[kMaxRanks];
volatile int g_child_count = 0;

void forwardSignal(int sig, siginfo_t* info, void*) {
  // The terminal sends Ctrl-C to the whole process group, the engines included: such a
  // signal (si_code SI_KERNEL) is not passed on, or an engine would count two and stop at
  // once instead of gracefully. A signal sent to the launcher alone by a process (kill, a
  // service manager: si_code <= 0) is passed on.
  if (info != nullptr && info->si_code > 0) return;
  for (int i = 0; i < g_child_count; ++i)
    if (g_children[i] > 0) ::kill(g_children[i], sig);
}

// A TCP port of this machine that is free now (the kernel's pick).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// Whether a process is stopped (SIGSTOP, a debugger): state T or t in /proc/PID/stat. A
// stopped process takes no SIGTERM until it is continued.
bool isStopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'T' || line[paren + 2] == 't');
}

std::string howItEnded(int rank, int status, bool distributed) {
  const std::string who = distributed ? "rank " + std::to_string(rank) : "the engine";
  if (WIFSIGNALED(status)) {
    return who + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  }
  return who + " exited with code " + std::to_string(WEXITSTATUS(status));
}

int codeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int parseCount(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > kMaxRanks)
    return -1;
  return value;
}

LaunchReport launchRanks(const std::vector<std::string>& argv_in, const RankLayout& layout,
                         const std::function<void(std::string_view)>& on_line) {
  LaunchReport report;
  const int local = layout.nproc_per_node;
  const int world = layout.nproc_per_node * layout.nnodes;
  const int port = layout.master_port > 0 ? layout.master_port : freePort();
  std::string threads;
  if (layout.distributed() && std::getenv("OMP_NUM_THREADS") == nullptr) {
    const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    threads = std::to_string(std::max(1L, cores / local));
  }

  struct sigaction action {};
  action.sa_sigaction = forwardSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  // A launcher whose terminal went away goes on reading, so no engine dies of SIGPIPE
  // through us.
  ::signal(SIGPIPE, SIG_IGN);

  int out_pipe[2];
  if (::pipe(out_pipe) != 0) {
    report.exit_code = 1;
    report.failure = std::string("cannot start the engine: ") + std::strerror(errno);
    return report;
  }
  std::vector<pid_t> pids(static_cast<size_t>(local), 0);
  std::vector<std::string> args = argv_in;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (int i = 0; i < local; ++i) {
    const int rank = layout.node_rank * local + i;
    const pid_t pid = ::fork();
    if (pid < 0) {
      report.exit_code = 1;
      report.failure = std::string("cannot start the engine: ") + std::strerror(errno);
      break;
    }
    if (pid == 0) {
      // An engine never outlives its launcher (killed by SIGKILL, say): no rank is left
      // waiting on a collective for minutes.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() == 1) ::_exit(1);
      if (i == 0) {
        ::dup2(out_pipe[1], STDOUT_FILENO);
      }
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      if (layout.distributed()) {
        const auto set = [](const char* k, const std::string& v) { ::setenv(k, v.c_str(), 1); };
        set("RANK", std::to_string(rank));
        set("WORLD_SIZE", std::to_string(world));
        set("LOCAL_RANK", std::to_string(i));
        set("LOCAL_WORLD_SIZE", std::to_string(local));
        set("GROUP_RANK", std::to_string(layout.node_rank));
        set("MASTER_ADDR", layout.master_addr);
        set("MASTER_PORT", std::to_string(port));
        if (!threads.empty()) set("OMP_NUM_THREADS", threads);
      }
      ::execv(argv[0], argv.data());
      std::fprintf(stderr, "mrcnn-workbench: cannot start %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(127);
    }
    pids[static_cast<size_t>(i)] = pid;
    g_children[i] = pid;
    g_child_count = i + 1;
  }
  ::close(out_pipe[1]);

  // Reads rank 0's lines while watching every process.
  std::string pending;
  bool reading = true;
  int alive = g_child_count;
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  const auto end_others = [&] {
    for (int i = 0; i < g_child_count; ++i) {
      const pid_t pid = pids[static_cast<size_t>(i)];
      if (pid <= 0) continue;
      if (isStopped(pid)) {
        // It would not take SIGTERM, and is likely why the others failed: said, and ended.
        ::kill(pid, SIGKILL);
        report.failure += "; rank " + std::to_string(layout.node_rank * local + i) +
                          " was stopped (SIGSTOP or a debugger) and is killed";
      } else {
        ::kill(pid, SIGTERM);
      }
    }
    kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  };
  if (!report.failure.empty()) end_others();
  char buf[65536];
  while (alive > 0 || reading) {
    if (reading) {
      pollfd p{out_pipe[0], POLLIN, 0};
      const int ready = ::poll(&p, 1, 100);
      if (ready > 0) {
        const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          reading = false;
        } else {
          pending.append(buf, static_cast<size_t>(n));
          size_t start = 0;
          for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
            std::string_view line(pending.data() + start, end - start);
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            on_line(line);
          }
          pending.erase(0, start);
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (int i = 0; i < g_child_count; ++i) {
      pid_t& pid = pids[static_cast<size_t>(i)];
      if (pid <= 0) continue;
      int status = 0;
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done != pid) continue;
      pid = 0;
      g_children[i] = 0;
      --alive;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && report.failure.empty()) {
        report.exit_code = codeOf(status);
        report.failure = howItEnded(layout.node_rank * local + i, status, layout.distributed());
        if (alive > 0) end_others();
      } else if (!failed && i == 0) {
        report.exit_code = 0;
      }
    }
    if (kill_at && std::chrono::steady_clock::now() > *kill_at) {
      for (int i = 0; i < g_child_count; ++i)
        if (pids[static_cast<size_t>(i)] > 0) ::kill(pids[static_cast<size_t>(i)], SIGKILL);
      kill_at.reset();
    }
  }
  if (!pending.empty()) on_line(pending);  // a last line without its newline
  ::close(out_pipe[0]);
  g_child_count = 0;
  return report;
}

}  // namespace mrcnn::app
