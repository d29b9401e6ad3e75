#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "dataset/loader/loader.h"
#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"
#include "engine/train/loss_scaler.h"

namespace mrcnn::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double residentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

class EventsHook : public TrainHook {
 public:
  EventsHook(EventWriter& events, uint32_t every, const LossScaler& scaler)
      : events_(events), every_(std::max<uint32_t>(1, every)), scaler_(scaler) {}

  void beforeTrain(TrainState&) override {
    loop_start_ = interval_start_ = Clock::now();
  }

  void afterBatch(TrainState&, const dataset::Batch& batch) override {
    for (const auto& w : batch.warnings) {
      events_.write(warningEvent(std::string(dataset::loaderWarningName(w.code)), w.message,
                                 w.image_id, w.annotation_id.value_or(0)));
    }
  }

  void afterStep(TrainState& s) override {
    sum_.total += s.losses.total;
    sum_.objectness += s.losses.objectness;
    sum_.rpn_box += s.losses.rpn_box;
    sum_.classifier += s.losses.classifier;
    sum_.box_reg += s.losses.box_reg;
    sum_.mask += s.losses.mask;
    ++steps_;
    images_ += s.images;
    wait_ += s.data_wait;
    if (s.step % every_ != 0 && s.step != s.total_steps) return;

    const auto now = Clock::now();
    const double interval = seconds(now - interval_start_);
    const double rate =
        static_cast<double>(s.step - s.first_step) / std::max(1e-9, seconds(now - loop_start_));
    const double n = static_cast<double>(std::max<uint64_t>(1, steps_));
    ProgressInfo p;
    p.step = s.step;
    p.epoch = s.epoch;
    p.lr = s.lr;
    p.loss_total = sum_.total / n;
    p.loss_rpn_objectness = sum_.objectness / n;
    p.loss_rpn_box = sum_.rpn_box / n;
    p.loss_fast_rcnn_class = sum_.classifier / n;
    p.loss_fast_rcnn_box = sum_.box_reg / n;
    p.loss_mask = sum_.mask / n;
    p.images_per_second = static_cast<double>(images_) / std::max(1e-9, interval);
    p.data_wait_share = interval > 0 ? wait_ / interval : 0;
    p.eta_seconds = static_cast<double>(s.total_steps - s.step) / std::max(1e-9, rate);
    p.rss_mib = residentMiB();
    p.skipped_steps = scaler_.skippedSteps();
    p.loss_scale = scaler_.enabled() ? scaler_.scale() : 0;
    events_.write(progressEvent(p));
    sum_ = {};
    steps_ = 0;
    images_ = 0;
    wait_ = 0;
    interval_start_ = Clock::now();
  }

 private:
  EventWriter& events_;
  uint32_t every_;
  const LossScaler& scaler_;
  StepLosses sum_;
  uint64_t steps_ = 0;
  uint64_t images_ = 0;
  double wait_ = 0;
  Clock::time_point loop_start_, interval_start_;
};

}  // namespace

std::unique_ptr<TrainHook> makeEventsHook(EventWriter& events, uint32_t every,
                                          const LossScaler& scaler) {
  return std::make_unique<EventsHook>(events, every, scaler);
}

}  // namespace mrcnn::train
