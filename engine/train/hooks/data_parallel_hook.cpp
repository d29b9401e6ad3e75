#include <cstdio>
#include <string>
#include <vector>

#include "engine/dist/data_parallel.h"
#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

class DataParallelHook : public TrainHook {
 public:
  DataParallelHook(dist::DataParallel& parallel, EventWriter& events, LossWeights weights)
      : parallel_(parallel), events_(events), weights_(weights) {}

  void beforeTrain(TrainState&) override { parallel_.broadcastWeights(); }

  // Each component is a mean over its own denominator (sampled anchors, sampled RoIs,
  // positive RoIs). Over the global batch it is (sum over ranks of mean_r x count_r) divided
  // by the global count; the gradient all-reduce averages over W ranks, so rank r runs
  // backward on mean_r x count_r x W / global_count.
  void beforeBackward(TrainState& s, MicroBatch& m) override {
    model::MaskRCNNLosses& l = m.losses;
    const bool has = l.total.defined();
    const double rpn = has ? l.rpn_sampled : 0, roi = has ? l.roi_sampled : 0,
                 pos = has ? l.mask_positives : 0;
    const StepLosses& r = m.report;
    const std::vector<double> global = parallel_.sum(
        {r.objectness * rpn, r.rpn_box * rpn, r.classifier * roi, r.box_reg * roi, r.mask * pos,
         rpn, roi, pos, static_cast<double>(m.images), s.stop_requested ? 1.0 : 0.0},
        "loss normalisation");
    if (has) {
      const double w = parallel_.size();
      const auto scale = [&](double count, double total) {
        return total > 0 ? count * w / total : 0.0;
      };
      const double a = scale(rpn, global[5]), b = scale(roi, global[6]), c = scale(pos, global[7]);
      at::Tensor total = (l.rpn_objectness + l.rpn_box * weights_.rpn_box) * a +
                         (l.classifier + l.box_reg * weights_.box_reg) * b;
      if (l.mask.defined()) total = total + l.mask * (weights_.mask * c);
      l.total = total;
    }
    const auto mean = [](double sum, double count) { return count > 0 ? sum / count : 0.0; };
    StepLosses g;
    g.objectness = mean(global[0], global[5]);
    g.rpn_box = mean(global[1], global[5]);
    g.classifier = mean(global[2], global[6]);
    g.box_reg = mean(global[3], global[6]);
    g.mask = mean(global[4], global[7]);
    g.total = g.objectness + g.rpn_box * weights_.rpn_box + g.classifier +
              g.box_reg * weights_.box_reg + g.mask * weights_.mask;
    m.report = g;
    m.images = static_cast<uint64_t>(global[8]);
    s.stop_requested = global[9] > 0;
  }

  void afterBackward(TrainState&) override {
    parallel_.averageGradients();
    ++steps_;
  }

  void afterTrain(TrainState&) override {
    const double seconds = parallel_.takeAllReduceSeconds();
    if (steps_ == 0) return;
    char per_step[32];
    std::snprintf(per_step, sizeof per_step, "%.1f",
                  seconds * 1000.0 / static_cast<double>(steps_));
    events_.write(logEvent("gradient all-reduce (" + parallel_.group().backendName() + ", " +
                           std::to_string(parallel_.size()) + " ranks): " + per_step +
                           " ms per step on average over " + std::to_string(steps_) + " steps"));
  }

 private:
  dist::DataParallel& parallel_;
  EventWriter& events_;
  LossWeights weights_;
  uint64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<TrainHook> makeDataParallelHook(dist::DataParallel& parallel, EventWriter& events,
                                                LossWeights weights) {
  return std::make_unique<DataParallelHook>(parallel, events, weights);
}

}  // namespace mrcnn::train
