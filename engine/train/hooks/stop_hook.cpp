#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

class StopHook : public TrainHook {
 public:
  void afterStep(TrainState& s) override {
    if (!s.stop_requested) return;
    s.status = "stopped";
    s.stop = true;
  }
};

}  // namespace

std::unique_ptr<TrainHook> makeStopHook() { return std::make_unique<StopHook>(); }

}  // namespace mrcnn::train
