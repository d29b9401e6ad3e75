// Whether this CPU computes bf16 natively (AVX-512 BF16 or AMX-BF16), as the engine decides
// whether a spec's use_amp bf16 runs or falls back to fp32 (engine/runtime/precision.h): tests
// that depend on the precision the engine picks ask it here.
#pragma once

#include <ATen/ATen.h>
#include <ATen/cpu/Utils.h>

namespace mrcnn::testing {

inline bool cpuHasNativeBf16() {
  const auto caps = at::cpu::get_cpu_capabilities();
  for (const char* key : {"avx512_bf16", "amx_bf16"}) {
    const auto it = caps.find(key);
    if (it != caps.end() && it->second.isBool() && it->second.toBool()) return true;
  }
  return false;
}

}  // namespace mrcnn::testing
