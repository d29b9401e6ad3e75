#include "engine/runtime/process_memory.h"

#include <unistd.h>

#include <fstream>

namespace mrcnn::engine {

double processResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

}  // namespace mrcnn::engine
