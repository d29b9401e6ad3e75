#include "engine/dist/rank_times.h"

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <vector>

#include "engine/dist/process_group.h"

namespace mrcnn::dist {

void RankTimes::stepStarted() {
  started_ = std::chrono::steady_clock::now();
  collectives_at_start_ = group_.collectiveSeconds();
}

void RankTimes::stepEnded(double data_wait_seconds) {
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double collectives = group_.collectiveSeconds() - collectives_at_start_;
  totals_[0] += std::max(0.0, wall - collectives - data_wait_seconds);
  totals_[1] += data_wait_seconds;
  totals_[2] += collectives;
  ++steps_;
}

std::string RankTimes::gatherReport() {
  // Every rank took the same steps; the host does not see NCCL's collectives' time.
  if (steps_ == 0 || group_.backendName() != "gloo") return {};
  std::string mine(sizeof totals_, '\0');
  std::memcpy(mine.data(), totals_, sizeof totals_);
  const std::vector<std::string> all = group_.allGatherBytes(mine, "gather of the step times");
  if (group_.rank() != 0) return {};
  std::ostringstream text;
  text << std::fixed << std::setprecision(0);
  const double n = static_cast<double>(steps_);
  size_t slowest = 0, fastest = 0;
  std::vector<double> busy;
  for (size_t r = 0; r < all.size(); ++r) {
    double t[3] = {0, 0, 0};
    if (all[r].size() == sizeof t) std::memcpy(t, all[r].data(), sizeof t);
    text << (r == 0 ? "" : "; ") << "rank " << r << " " << t[0] * 1000 / n << " + "
         << t[1] * 1000 / n << " + " << t[2] * 1000 / n;
    busy.push_back((t[0] + t[1]) * 1000 / n);
    if (busy[r] > busy[slowest]) slowest = r;
    if (busy[r] < busy[fastest]) fastest = r;
  }
  if (busy[slowest] - busy[fastest] > 0.05 * busy[slowest]) {
    text << "; rank " << slowest << " is the slowest, " << busy[slowest] - busy[fastest]
         << " ms a step behind rank " << fastest << ", and every rank waits for it";
  }
  return text.str();
}

}  // namespace mrcnn::dist
