#include <string>

#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

class EarlyStopHook : public TrainHook {
 public:
  EarlyStopHook(EventWriter& events, double bbox, double segm)
      : events_(events), bbox_(bbox), segm_(segm) {}

  void afterEval(TrainState& s) override {
    if (bbox_ <= 0 && segm_ <= 0) return;
    if (s.eval->bbox_ap < bbox_ || s.eval->segm_ap < segm_) return;
    if (s.step >= s.total_steps) return;  // the end anyway
    events_.write(logEvent("target mAP reached at step " + std::to_string(s.step) + ": bbox " +
                           std::to_string(s.eval->bbox_ap) + ", segm " +
                           std::to_string(s.eval->segm_ap)));
    s.stop = true;
  }

 private:
  EventWriter& events_;
  double bbox_, segm_;
};

}  // namespace

std::unique_ptr<TrainHook> makeEarlyStopHook(EventWriter& events, double target_bbox,
                                             double target_segm) {
  return std::make_unique<EarlyStopHook>(events, target_bbox, target_segm);
}

}  // namespace mrcnn::train
