#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "engine/dist/process_group.h"
#include "engine/train/event_writer.h"
#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

using Clock = std::chrono::steady_clock;

// Each rank's step split into its forward and backward, its wait for data and its time in
// collectives, gathered to rank 0 at the end.
class RankBalanceHook : public TrainHook {
 public:
  RankBalanceHook(dist::ProcessGroup& group, EventWriter& events)
      : group_(group), events_(events) {}

  void beforeStep(TrainState&) override {
    started_ = Clock::now();
    collectives_at_start_ = group_.collectiveSeconds();
  }

  // After the gradients' all-reduce (this hook comes after the data-parallel one).
  void afterBackward(TrainState& s) override {
    const double wall = std::chrono::duration<double>(Clock::now() - started_).count();
    const double collectives = group_.collectiveSeconds() - collectives_at_start_;
    totals_[0] += std::max(0.0, wall - collectives - s.data_wait);
    totals_[1] += s.data_wait;
    totals_[2] += collectives;
    ++steps_;
  }

  void afterTrain(TrainState&) override {
    // Every rank trained the same steps; on NCCL the host does not see the collectives' time.
    if (steps_ == 0 || group_.backendName() != "gloo") return;
    std::string mine(sizeof totals_, '\0');
    std::memcpy(mine.data(), totals_, sizeof totals_);
    const std::vector<std::string> all = group_.allGatherBytes(mine, "gather of the step times");
    if (!events_.active()) return;
    std::ostringstream text;
    text << std::fixed << std::setprecision(0)
         << "per step, ms (compute + data + collectives, the last with the wait for slower "
            "ranks):";
    const double n = static_cast<double>(steps_);
    size_t slowest = 0, fastest = 0;
    std::vector<double> busy;
    for (size_t r = 0; r < all.size(); ++r) {
      double t[3] = {0, 0, 0};
      if (all[r].size() == sizeof t) std::memcpy(t, all[r].data(), sizeof t);
      text << (r == 0 ? " " : "; ") << "rank " << r << " " << t[0] * 1000 / n << " + "
           << t[1] * 1000 / n << " + " << t[2] * 1000 / n;
      busy.push_back((t[0] + t[1]) * 1000 / n);
      if (busy[r] > busy[slowest]) slowest = r;
      if (busy[r] < busy[fastest]) fastest = r;
    }
    // Lockstep: every step waits for the slowest rank at each collective.
    if (busy[slowest] - busy[fastest] > 0.05 * busy[slowest]) {
      text << "; rank " << slowest << " is the slowest, " << busy[slowest] - busy[fastest]
           << " ms a step behind rank " << fastest << ", and every rank waits for it";
    }
    events_.write(logEvent(text.str()));
  }

 private:
  dist::ProcessGroup& group_;
  EventWriter& events_;
  Clock::time_point started_;
  double collectives_at_start_ = 0;
  double totals_[3] = {0, 0, 0};  // seconds: compute, data, collectives
  uint64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<TrainHook> makeRankBalanceHook(dist::ProcessGroup& group, EventWriter& events) {
  return std::make_unique<RankBalanceHook>(group, events);
}

}  // namespace mrcnn::train
