// The spec's precision (use_amp, amp_dtype) for running the model: fp32, or LibTorch's
// autocast in bfloat16 (CPU or GPU) or float16 (GPU only), as training uses it.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>
#include <string>

#include "specs/spec.h"

namespace mrcnn::engine {

struct Precision {
  bool autocast = false;
  at::ScalarType dtype = at::kFloat;  // kBFloat16 or kHalf under autocast
  std::string name = "fp32";          // "fp32", "bf16", "fp16": what the events say
};

// std::nullopt with `error` set when the spec asks for what the device cannot do (fp16 on the
// CPU).
std::optional<Precision> precisionFromSpec(const spec::Experiment& spec, const c10::Device& device,
                                           std::string* error);

}  // namespace mrcnn::engine
