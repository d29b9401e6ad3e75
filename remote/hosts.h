// The hosts a run can go to: `$XDG_CONFIG_HOME/mrcnn-workbench/hosts.json` (default
// ~/.config/...), no secret in it (ssh's keys, agent and config do the authenticating).
//   {"hosts": [{"name": "gpu1", "kind": "ssh", "destination": "me@gpu1.lab", "port": 22,
//               "identity_file": "~/.ssh/id_ed25519", "ssh_options": ["-o", "..."],
//               "engine": "/opt/mrcnn/bin/mrcnn-engine", "work_dir": "/scratch/me/mrcnn",
//               "nproc_per_node": 4,
//               "slurm": {"partition": "gpu", "nodes": 1, "gpus_per_node": 4,
//                         "time": "12:00:00", "account": "", "extra": ["#SBATCH ..."],
//                         "commands_dir": ""}}]}
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::remote {

struct SlurmOptions {
  std::string partition;
  int nodes = 1;
  int gpus_per_node = 0;
  std::string time;     // sbatch's --time, e.g. "12:00:00"
  std::string account;
  std::vector<std::string> extra;  // more lines for the batch script
  // Where sbatch, squeue, scancel and srun are on the host when a non-interactive shell's PATH
  // lacks them (a module system); empty: on its PATH.
  std::string commands_dir;
};

struct Host {
  std::string name;
  std::string kind = "ssh";   // "ssh": the engine runs there; "slurm": submitted with sbatch
  std::string destination;    // [user@]host, as ssh takes it (a Host alias of ~/.ssh/config too)
  int port = 0;               // 0: ssh's own (its config, else 22)
  std::string identity_file;  // empty: ssh's own keys and agent
  std::vector<std::string> ssh_options;  // more ssh arguments, e.g. {"-o", "ProxyJump=gw"}
  std::string engine;         // the remote path of mrcnn-engine
  std::string work_dir;       // the remote folder the specs and runs go into
  int nproc_per_node = 1;     // engine processes on the host (data-parallel)
  SlurmOptions slurm;
};

struct HostsFile {
  std::vector<Host> hosts;
  const Host* find(const std::string& name) const;
};

// A hosts file that cannot be used: the file, the place in it ("hosts[1].port") and why.
class HostsError : public std::runtime_error {
 public:
  HostsError(const std::string& file, const std::string& place, const std::string& why);
};

// $XDG_CONFIG_HOME/mrcnn-workbench/hosts.json (an absolute XDG_CONFIG_HOME), else
// $HOME/.config/mrcnn-workbench/hosts.json.
std::filesystem::path defaultHostsPath();

// Reads and checks a hosts file; a missing file is an empty list. Throws HostsError.
HostsFile loadHosts(const std::filesystem::path& path);
// The same on the file's text; `file` names it in messages.
HostsFile parseHosts(std::string_view json, const std::string& file);
// The file's text (what saveHosts writes).
std::string hostsJson(const HostsFile& hosts);
// Writes the file whole or not at all (the folder made when missing); hosts that would not
// read back (a missing field, a relative path) throw HostsError and nothing is written.
void saveHosts(const std::filesystem::path& path, const HostsFile& hosts);

}  // namespace mrcnn::remote
