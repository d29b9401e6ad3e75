// Dynamic loss scaling for fp16 training, with PyTorch's GradScaler rules: the loss is
// multiplied by the scale before backward so small fp16 gradients do not flush to zero; a
// step whose unscaled gradients hold an inf or NaN is skipped (counted) and the scale halved;
// after growth_interval good steps in a row the scale doubles. (TAO's MaskRCNN uses TF's
// DynamicLossScale with the same rules, starting at 2^15; 2^16 here is GradScaler's start.)
// Disabled (fp32, bf16), the scale is 1 and nothing is skipped by it.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model/state_dict.h"

namespace mrcnn::train {

struct LossScalerOptions {
  bool enabled = false;
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  uint32_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});

  bool enabled() const { return options_.enabled; }
  // The current scale (1 when disabled).
  double scale() const { return options_.enabled ? scale_ : 1.0; }
  // loss × scale (the loss itself when disabled): call backward on this.
  at::Tensor scaleLoss(const at::Tensor& loss) const;

  // Records the outcome of a step (the solver calls it): an inf/NaN gradient backs the scale
  // off and counts a skipped step; otherwise a good step, growing the scale every
  // growth_interval good steps in a row. No effect when disabled.
  void update(bool found_inf);

  uint64_t skippedSteps() const { return skipped_steps_; }
  uint32_t goodStepsInARow() const { return growth_tracker_; }

  // "scale" (double), "growth_tracker" and "skipped_steps" (int64) under `prefix`, as
  // scalar tensors.
  model::StateDict stateDict(const std::string& prefix = "") const;
  // Throws model::StateDictError naming `source` and the key when one is missing or bad.
  void loadStateDict(const model::StateDict& state, const std::string& prefix,
                     const std::string& source);

 private:
  LossScalerOptions options_;
  double scale_;
  uint32_t growth_tracker_ = 0;
  uint64_t skipped_steps_ = 0;
};

}  // namespace mrcnn::train
