#include "engine/train/loss_scaler.h"

#include <ATen/ATen.h>

#include <cmath>

namespace mrcnn::train {
namespace {

const at::Tensor* find(const model::StateDict& state, const std::string& key) {
  for (const auto& [name, t] : state) {
    if (name == key) return &t;
  }
  return nullptr;
}

at::Tensor scalarAt(const model::StateDict& state, const std::string& key,
                    const std::string& source) {
  const at::Tensor* t = find(state, key);
  if (t == nullptr) throw model::StateDictError(source + ": no " + key + " (loss scaler state)");
  if (t->numel() != 1)
    throw model::StateDictError(source + ": " + key + " must be a scalar, has " +
                                std::to_string(t->numel()) + " elements");
  return *t;
}

}  // namespace

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {}

at::Tensor LossScaler::scaleLoss(const at::Tensor& loss) const {
  if (!options_.enabled) return loss;
  return loss * scale_;
}

void LossScaler::update(bool found_inf) {
  if (!options_.enabled) return;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_steps_;
    return;
  }
  if (++growth_tracker_ >= options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;  // as GradScaler: never grow to inf
    growth_tracker_ = 0;
  }
}

model::StateDict LossScaler::stateDict(const std::string& prefix) const {
  return {
      {prefix + "scale", at::scalar_tensor(scale_, at::kDouble)},
      {prefix + "growth_tracker",
       at::scalar_tensor(static_cast<int64_t>(growth_tracker_), at::kLong)},
      {prefix + "skipped_steps",
       at::scalar_tensor(static_cast<int64_t>(skipped_steps_), at::kLong)},
  };
}

void LossScaler::loadStateDict(const model::StateDict& state, const std::string& prefix,
                               const std::string& source) {
  const double scale = scalarAt(state, prefix + "scale", source).item<double>();
  const int64_t tracker = scalarAt(state, prefix + "growth_tracker", source).item<int64_t>();
  const int64_t skipped = scalarAt(state, prefix + "skipped_steps", source).item<int64_t>();
  if (!(scale > 0) || !std::isfinite(scale))
    throw model::StateDictError(source + ": " + prefix + "scale must be a positive number, is " +
                                std::to_string(scale));
  if (tracker < 0 || skipped < 0)
    throw model::StateDictError(source + ": " + prefix + "growth_tracker and " + prefix +
                                "skipped_steps must not be negative");
  scale_ = scale;
  growth_tracker_ = static_cast<uint32_t>(tracker);
  skipped_steps_ = static_cast<uint64_t>(skipped);
}

}  // namespace mrcnn::train
