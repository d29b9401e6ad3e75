// Where this process stands in a data-parallel job, read from the environment its launcher
// set: torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_USE_AGENT_STORE), which `mrcnn-workbench --headless --nproc-per-node N` sets
// too, or SLURM's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE;
// MASTER_ADDR from the job script, else the job's first host in SLURM_JOB_NODELIST;
// MASTER_PORT from the job script, else 29500 + SLURM_JOB_ID's last four digits, so that two
// jobs sharing a node do not meet). Neither: one process, world size 1.
// MRCNN_DIST_FORCE_GROUP=1 makes even a world of one a process group (master 127.0.0.1 and
// port 29500 unless MASTER_ADDR/MASTER_PORT say otherwise): its all-reduces, broadcasts and
// sharded evaluation then run through the backend (NCCL on a GPU) instead of being skipped.
// No Torch here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mrcnn::dist {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 29500;
  // torchrun's agent hosts the rendezvous store: every rank connects to it as a client.
  bool agent_store = false;
  std::string launcher = "none";  // "torchrun", "slurm" or "none"
  bool force_group = false;        // MRCNN_DIST_FORCE_GROUP: a group even for one process

  bool distributed() const { return world_size > 1 || force_group; }
};

// Reads the environment through `get` (std::getenv by default). Errors name the variable and
// its value: a rank outside the world, a port that is not a port, a world without its master.
struct LaunchEnvResult {
  std::optional<LaunchEnv> env;
  std::string error;
};
LaunchEnvResult readLaunchEnv(const std::function<const char*(const char*)>& get = {});

// The first host of a SLURM host list, as SLURM_JOB_NODELIST writes it: "gpu[03-05,09],login1"
// gives "gpu03", "node7" gives "node7"; empty for an empty or malformed list.
std::string firstSlurmHost(std::string_view list);

}  // namespace mrcnn::dist
