#include "engine/train/hooks/hooks.h"
#include "engine/train/lr_schedule.h"

namespace mrcnn::train {
namespace {

class ScheduleHook : public TrainHook {
 public:
  explicit ScheduleHook(const LrSchedule& schedule) : schedule_(schedule) {}
  void beforeStep(TrainState& s) override { s.lr = schedule_.at(s.step); }

 private:
  const LrSchedule& schedule_;
};

}  // namespace

std::unique_ptr<TrainHook> makeScheduleHook(const LrSchedule& schedule) {
  return std::make_unique<ScheduleHook>(schedule);
}

}  // namespace mrcnn::train
