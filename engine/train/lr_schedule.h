// TAO MaskRCNN's learning-rate schedule: linear warmup, then step decay.
//
// As TAO computes it (nvidia_tao_tf1/cv/mask_rcnn/training/learning_rates.py,
// step_learning_rate_with_linear_warmup; the levels are made absolute in
// hyperparameters/mask_rcnn_params.py as decay × init_learning_rate):
//   step <  warmup_steps:  warmup_lr + step / warmup_steps × (init_lr − warmup_lr)
//   otherwise:             tf.train.piecewise_constant(step, boundaries = learning_rate_steps,
//                            values = [init_lr] + [init_lr × level for each decay level])
// piecewise_constant keeps values[i] while step <= boundaries[i]: the rate changes on the
// step *after* each boundary (at step == learning_rate_steps[i] it is still the previous
// rate). `step` is the global step before the update it is used for (TF's global_step
// when the train op runs), so the first update (step 0) uses warmup_learning_rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "specs/spec.h"

namespace mrcnn::train {

struct LrScheduleOptions {
  double warmup_learning_rate = 0.0001;
  double init_learning_rate = 0.02;
  uint64_t warmup_steps = 1000;
  std::vector<uint64_t> learning_rate_steps;       // ascending
  std::vector<double> learning_rate_decay_levels;  // multipliers of init_learning_rate
};

class LrSchedule {
 public:
  // Throws std::invalid_argument when steps and levels differ in count or the steps are not
  // ascending (the spec's validation reports these first, with their place in the file).
  explicit LrSchedule(LrScheduleOptions options);
  // From the spec's fields (the string lists as the spec library decoded them).
  static LrSchedule fromSpec(const spec::LoadedSpec& spec);

  // The learning rate of the update made at global step `step` (0-based).
  double at(uint64_t step) const;
  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
};

}  // namespace mrcnn::train
