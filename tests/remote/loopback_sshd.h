// An OpenSSH server on 127.0.0.1 for the remote-run tests: a throwaway host key and user key
// in a temporary folder, a free port, this machine's user. It can be stopped with every
// session it holds (a dropped link) and started again on the same port.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QThread>
#include <filesystem>
#include <map>
#include <string>

#include "remote/hosts.h"

namespace mrcnn::testing {

class LoopbackSshd {
 public:
  explicit LoopbackSshd(const QString& dir) : dir_(dir) {}
  ~LoopbackSshd() { stop(); }

  // False with the reason in error() when this machine cannot run one (no sshd, not allowed).
  bool start() {
    if (!QFile::exists(kSshd)) return fail("no OpenSSH server (" + QString(kSshd) + "): install openssh-server");
    if (port_ == 0) {
      port_ = freePort();
      if (!keygen("host_key") || !keygen("user_key") || !keygen("other_key")) return false;
      QFile::copy(path("user_key.pub"), path("authorized_keys"));
      writeConfig();
      writeKnownHosts("host_key.pub", "known_hosts");
      writeKnownHosts("other_key.pub", "wrong_known_hosts");
    }
    QDir().mkpath("/run/sshd");  // its privilege separation folder (Debian makes it at boot)
    QProcess sshd;
    sshd.start(kSshd, {"-f", path("sshd_config"), "-E", path("sshd.log")});
    if (!sshd.waitForFinished(10000) || sshd.exitCode() != 0) {
      return fail("sshd did not start: " + QString::fromUtf8(sshd.readAllStandardError()) + readLog());
    }
    for (int i = 0; i < 100; ++i) {
      if (listening()) return true;
      QThread::msleep(50);
    }
    return fail("sshd is not listening on port " + QString::number(port_) + ": " + readLog());
  }

  // The server and every session it holds: connections drop as in a server restart.
  void stop() {
    QFile pid_file(path("sshd.pid"));
    if (!pid_file.open(QIODevice::ReadOnly)) return;
    const pid_t listener = pid_file.readAll().trimmed().toInt();
    pid_file.close();
    if (listener <= 0) return;
    // Every process below the listener (each session's privileged and unprivileged sshd,
    // what runs in them): killed, so the clients see their connections drop. A run started
    // detached has left this tree (setsid, its starter gone).
    std::map<pid_t, pid_t> parent;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      QFile status(QString::fromStdString((entry.path() / "status").string()));
      if (!status.open(QIODevice::ReadOnly)) continue;
      for (const QByteArray& line : status.readAll().split('\n'))
        if (line.startsWith("PPid:")) parent[std::stoi(name)] = line.mid(5).trimmed().toInt();
    }
    for (const auto& [pid, ppid] : parent) {
      for (pid_t up = ppid; up > 1; up = parent.count(up) ? parent[up] : 0) {
        if (up == listener) {
          ::kill(pid, SIGKILL);
          break;
        }
      }
    }
    ::kill(listener, SIGTERM);
    for (int i = 0; i < 100 && ::kill(listener, 0) == 0; ++i) QThread::msleep(20);
    QFile::remove(path("sshd.pid"));
  }

  // A host of the hosts file for this server: the given engine and work folder.
  remote::Host host(const QString& engine, const QString& work_dir, bool wrong_key = false) const {
    remote::Host h;
    h.name = "loopback";
    const passwd* user = ::getpwuid(::getuid());  // who runs the test, whatever $USER says
    h.destination = std::string(user != nullptr ? user->pw_name : "root") + "@127.0.0.1";
    h.port = port_;
    h.identity_file = path("user_key").toStdString();
    h.ssh_options = {"-F", "/dev/null", "-o",
                     "UserKnownHostsFile=" + path(wrong_key ? "wrong_known_hosts" : "known_hosts").toStdString(),
                     "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"};
    h.engine = engine.toStdString();
    h.work_dir = work_dir.toStdString();
    return h;
  }

  QString error() const { return error_; }

 private:
  static constexpr const char* kSshd = "/usr/sbin/sshd";

  QString path(const QString& name) const { return dir_ + "/" + name; }
  bool fail(const QString& why) {
    error_ = why;
    return false;
  }
  QString readLog() const {
    QFile log(path("sshd.log"));
    return log.open(QIODevice::ReadOnly) ? QString::fromUtf8(log.readAll()) : QString();
  }
  bool keygen(const QString& name) {
    QProcess p;
    p.start("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-f", path(name)});
    if (p.waitForFinished(20000) && p.exitCode() == 0) return true;
    return fail("ssh-keygen failed: " + QString::fromUtf8(p.readAllStandardError()));
  }
  void writeConfig() const {
    QFile f(path("sshd_config"));
    f.open(QIODevice::WriteOnly);
    f.write(QString("Port %1\nListenAddress 127.0.0.1\nHostKey %2\nAuthorizedKeysFile %3\n"
                    "PidFile %4\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
                    "LogLevel ERROR\n")
                .arg(port_)
                .arg(path("host_key"), path("authorized_keys"), path("sshd.pid"))
                .toUtf8());
  }
  void writeKnownHosts(const QString& key, const QString& name) const {
    QFile in(path(key));
    in.open(QIODevice::ReadOnly);
    const QList<QByteArray> parts = in.readAll().split(' ');
    QFile out(path(name));
    out.open(QIODevice::WriteOnly);
    out.write(QString("[127.0.0.1]:%1 ").arg(port_).toUtf8() + parts.value(0) + " " + parts.value(1) + "\n");
  }
  static int freePort() {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t n = sizeof a;
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
    ::close(s);
    return ntohs(a.sin_port);
  }
  bool listening() const {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    return ok;
  }

  QString dir_;
  int port_ = 0;
  QString error_;
};

}  // namespace mrcnn::testing
