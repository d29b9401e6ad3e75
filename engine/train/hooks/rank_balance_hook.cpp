#include <string>

#include "engine/dist/rank_times.h"
#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

class RankBalanceHook : public TrainHook {
 public:
  RankBalanceHook(dist::ProcessGroup& group, EventWriter& events)
      : times_(group), events_(events) {}

  void beforeStep(TrainState&) override { times_.stepStarted(); }
  // After the gradients' all-reduce (this hook comes after the data-parallel one).
  void afterBackward(TrainState& s) override { times_.stepEnded(s.data_wait); }

  void afterTrain(TrainState&) override {
    const std::string report = times_.gatherReport();
    if (!report.empty())
      events_.write(
          logEvent("per step, ms (compute + data + collectives, the last with the "
                   "wait for slower ranks): " +
                   report));
  }

 private:
  dist::RankTimes times_;
  EventWriter& events_;
};

}  // namespace

std::unique_ptr<TrainHook> makeRankBalanceHook(dist::ProcessGroup& group, EventWriter& events) {
  return std::make_unique<RankBalanceHook>(group, events);
}

}  // namespace mrcnn::train
