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
  // Set when the spec's mixed precision is not used on this machine, saying why (bf16 on a
  // CPU that would only emulate it): training shows it as a warning, inference and evaluation
  // (whose results it does not change beyond rounding) as a log line.
  std::string fallback;
};

// std::nullopt with `error` set when the spec asks for what the device cannot do (fp16 on the
// CPU). bf16 on a CPU without AVX-512 BF16 or AMX runs in fp32 instead (LibTorch emulates
// bf16 there, several times slower than fp32), with `fallback` saying so, unless the
// environment sets MRCNN_CPU_BF16=1.
std::optional<Precision> precisionFromSpec(const spec::Experiment& spec, const c10::Device& device,
                                           std::string* error);

// Whether this CPU computes bf16 natively: AVX-512 BF16 or AMX-BF16 (LibTorch's cpuinfo).
bool cpuHasNativeBf16();

}  // namespace mrcnn::engine
