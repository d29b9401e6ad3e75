// The command lines of the system's ssh and rsync for a host. A remote command is an argument
// list, each argument quoted for the remote POSIX shell: nothing from a spec or a path is ever
// pasted into a shell string as it is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "remote/hosts.h"

namespace mrcnn::remote {

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
// rsync of the host's folder `remote_dir` into `local_dir` (what changed only, partial files
// kept for the next try, remote names taken as they are).
std::vector<std::string> rsyncArgv(const Host& host, const std::string& remote_dir,
                                   const std::string& local_dir);

}  // namespace mrcnn::remote
