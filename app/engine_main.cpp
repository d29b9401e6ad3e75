// mrcnn-engine: runs one task from a spec. Started by mrcnn-workbench (GUI or --headless).
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli.h"

namespace {

// LibTorch's CPU kernels run on OpenMP threads, and GNU OpenMP's threads spin at every
// barrier for a long while (300,000 rounds) before they sleep. On cores with nothing else to
// do that is cheap, but the engine also runs data-loading threads, and the GUI, a build or a
// second run may share the cores: then a spinning thread burns the time slice another thread
// needed. Measured on 2 cores (shapes training, 128x192, bf16): under a load of 8 the default
// trained at 0.31 images/s and passive waits at 0.95; on the quiet machine the default gave
// 7.0 images/s, passive waits 5.9-6.5 and passive waits after 20,000 spins 6.8-7.2. So: a
// short spin, then sleep. The runtime reads these when it loads, before main, so the engine
// sets them and starts itself again; a policy or spin count the user set is left alone.
void boundedOpenMpSpinning(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0 || setenv("GOMP_SPINCOUNT", "20000", 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // Not restarted (no /proc): run with the runtime's defaults.
}

}  // namespace

int main(int argc, char** argv) {
  boundedOpenMpSpinning(argv);
  // A file size limit (ulimit -f) then fails the write (EFBIG), which the engine reports like
  // a full disk, instead of killing it with SIGXFSZ mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  return mrcnn::engine::engineMain(args, std::cout, std::cerr);
}
