#include "remote/ssh_command.h"

namespace mrcnn::remote {
namespace {

// One word of rsync's -e command: rsync splits it at spaces and honours quotes.
std::string rsyncWord(const std::string& word) {
  if (word.find_first_of(" '\"") == std::string::npos) return word;
  if (word.find('\'') == std::string::npos) return "'" + word + "'";
  return "\"" + word + "\"";
}

}  // namespace

std::string shellQuote(std::string_view arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string remoteCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += shellQuote(a);
  }
  return out;
}

std::vector<std::string> sshOptions(const Host& host) {
  std::vector<std::string> o = {"-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
                                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"};
  if (host.port != 0) o.insert(o.end(), {"-p", std::to_string(host.port)});
  if (!host.identity_file.empty()) o.insert(o.end(), {"-i", host.identity_file});
  o.insert(o.end(), host.ssh_options.begin(), host.ssh_options.end());
  return o;
}

std::vector<std::string> sshArgv(const Host& host, const std::vector<std::string>& remote_argv) {
  std::vector<std::string> argv = {"ssh"};
  const std::vector<std::string> options = sshOptions(host);
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(host.destination);
  argv.push_back(remoteCommand(remote_argv));
  return argv;
}

std::vector<std::string> rsyncArgv(const Host& host, const std::string& remote_dir,
                                   const std::string& local_dir) {
  std::string ssh = "ssh";
  for (const std::string& o : sshOptions(host)) ssh += " " + rsyncWord(o);
  const auto slash = [](std::string dir) { return dir.ends_with('/') ? dir : dir + "/"; };
  return {"rsync", "--archive", "--partial", "--protect-args", "-e", ssh,
          host.destination + ":" + slash(remote_dir), slash(local_dir)};
}

ChildResult runOnHost(const Host& host, const std::vector<std::string>& remote_argv,
                      std::string_view input) {
  return runChild(sshArgv(host, remote_argv), input);
}

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

void throwRemote(const Host& host, const std::string& what, const ChildResult& result) {
  std::string why = lastLines(result.err, 3);
  if (why.empty()) why = "exit code " + std::to_string(result.exit_code);
  throw RemoteError(host.name + " (" + host.destination + "): " + what + ": " + why);
}

}  // namespace mrcnn::remote
