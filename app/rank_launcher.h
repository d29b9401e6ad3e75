// Starts the engine processes of one machine and watches them: one process, or the N ranks of
// a data-parallel job with torchrun's environment in each (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT; OMP_NUM_THREADS splitting the cores
// unless set). The first process's stdout (rank 0's on node 0) is handed line by line to the
// caller; the other ranks write no events. When a process dies or fails, the others are
// ended (SIGTERM, then SIGKILL after a grace period) and the report names the rank and how
// it ended. Signals sent to the launcher alone are passed on to every process.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::app {

struct RankLayout {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port of this machine (one node only)
  bool distributed() const { return nproc_per_node * nnodes > 1; }
};

struct LaunchReport {
  int exit_code = 0;    // the first failing rank's (128+N for signal N), else 0
  std::string failure;  // "rank 1 was killed by signal 9 (Killed)"; empty when all succeeded
};

// argv: the engine and its arguments. `on_line` gets each line of the first process's stdout.
// Returns how the processes ended; a start failure is reported in `failure` with code 1.
LaunchReport launchRanks(const std::vector<std::string>& argv, const RankLayout& layout,
                         const std::function<void(std::string_view)>& on_line);

// Parses a --nproc-per-node style value: a whole number in [1, 1024], else -1.
int parseCount(const std::string& text);

}  // namespace mrcnn::app
