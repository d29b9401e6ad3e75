#include "remote/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace mrcnn::remote {
namespace {

constexpr size_t kKeptErr = 64 << 10;

struct Pipe {
  int fd[2] = {-1, -1};
  bool open() { return ::pipe2(fd, O_CLOEXEC) == 0; }
  void closeBoth() {
    for (int& f : fd) {
      if (f >= 0) ::close(f);
      f = -1;
    }
  }
};

int statusCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Starts argv with its stdin, stdout and stderr on the pipes' ends; -1 when it cannot start.
pid_t spawn(const std::vector<std::string>& argv, Pipe& in, Pipe& out, Pipe& err, std::string* why) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // A process group of its own: Ctrl-C on the terminal reaches the launcher, which decides
  // (a remote stop, then following to the end), not the ssh it follows with.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    *why = argv[0] + ": cannot start: " + std::strerror(rc);
    return -1;
  }
  return pid;
}

// The loop both entries share: writes `input`, reads stdout and stderr until both close.
ChildResult run(const std::vector<std::string>& argv, std::string_view input,
                const std::function<void(std::string_view)>* on_line,
                const std::function<bool()>& should_stop) {
  ChildResult result;
  Pipe in, out, err;
  if (!in.open() || !out.open() || !err.open()) {
    result.err = std::string("cannot make a pipe: ") + std::strerror(errno);
    return result;
  }
  const pid_t pid = spawn(argv, in, out, err, &result.err);
  ::close(in.fd[0]);
  ::close(out.fd[1]);
  ::close(err.fd[1]);
  in.fd[0] = out.fd[1] = err.fd[1] = -1;
  if (pid < 0) {
    in.closeBoth();
    out.closeBoth();
    err.closeBoth();
    return result;
  }
  // A reader that has gone away must not kill us with SIGPIPE while we write its stdin.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  while (!input.empty()) {
    const ssize_t n = ::write(in.fd[1], input.data(), input.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    input.remove_prefix(static_cast<size_t>(n));
  }
  ::sigaction(SIGPIPE, &previous, nullptr);
  in.closeBoth();

  std::string pending;  // stdout not yet handed over as a line
  bool stopped = false;
  char buffer[1 << 16];
  int open_count = 2;
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  while (open_count > 0) {
    if (!stopped && should_stop && should_stop()) {
      ::kill(pid, SIGTERM);
      stopped = true;
    }
    const int ready = ::poll(fds, 2, 200);
    if (ready < 0 && errno != EINTR) break;
    for (pollfd& p : fds) {
      if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(p.fd);
        p.fd = -1;
        --open_count;
        continue;
      }
      const std::string_view chunk(buffer, static_cast<size_t>(n));
      if (&p == &fds[1]) {
        result.err.append(chunk);
        if (result.err.size() > kKeptErr) result.err.erase(0, result.err.size() - kKeptErr);
      } else if (on_line == nullptr) {
        result.out.append(chunk);
      } else {
        pending.append(chunk);
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
          (*on_line)(std::string_view(pending).substr(start, nl - start));
        pending.erase(0, start);
      }
    }
  }
  out.fd[0] = err.fd[0] = -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = statusCode(status);
  return result;
}

}  // namespace

ChildResult runChild(const std::vector<std::string>& argv, std::string_view input) {
  return run(argv, input, nullptr, {});
}

ChildResult streamChild(const std::vector<std::string>& argv,
                        const std::function<void(std::string_view)>& on_line,
                        const std::function<bool()>& should_stop) {
  return run(argv, {}, &on_line, should_stop);
}

}  // namespace mrcnn::remote
