// The command lines of the system's ssh and rsync for a host. A remote command is an argument
// list, each argument quoted for the remote POSIX shell: nothing from a spec or a path is ever
// pasted into a shell string as it is.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "remote/child_process.h"
#include "remote/hosts.h"

namespace mrcnn::remote {

// What went wrong talking to a host, with ssh's or the host's own words.
class RemoteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One argument as a POSIX shell reads it back unchanged: 'it'\''s'.
std::string shellQuote(std::string_view arg);
// The arguments quoted and joined by spaces: the command string ssh hands the remote shell.
std::string remoteCommand(const std::vector<std::string>& argv);

// ssh's options for the host: keys and agent only (BatchMode: never a password prompt), a
// connect timeout, keep-alives that notice a dropped link within ~15 s, the host's port,
// identity file and own options.
std::vector<std::string> sshOptions(const Host& host);
// `ssh OPTIONS DESTINATION COMMAND` running `remote_argv` on the host.
std::vector<std::string> sshArgv(const Host& host, const std::vector<std::string>& remote_argv);
// Runs `remote_argv` on the host through ssh, `input` on its stdin.
ChildResult runOnHost(const Host& host, const std::vector<std::string>& remote_argv,
                      std::string_view input = {});
// Throws RemoteError: "<host> (<destination>): <what>: <the last lines of stderr>".
[[noreturn]] void throwRemote(const Host& host, const std::string& what, const ChildResult& result);
// The last `lines` lines of text (trailing newlines dropped), for a message.
std::string lastLines(const std::string& text, size_t lines);

// rsync of the host's folder `remote_dir` into `local_dir` (what changed only, partial files
// kept for the next try, remote names taken as they are).
std::vector<std::string> rsyncArgv(const Host& host, const std::string& remote_dir,
                                   const std::string& local_dir);

}  // namespace mrcnn::remote
