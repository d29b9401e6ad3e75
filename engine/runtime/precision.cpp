#include "engine/runtime/precision.h"

#include <ATen/cpu/Utils.h>

#include <cstdlib>

namespace mrcnn::engine {

bool cpuHasNativeBf16() {
  static const bool native = [] {
    const auto caps = at::cpu::get_cpu_capabilities();
    const auto has = [&](const char* key) {
      const auto it = caps.find(key);
      return it != caps.end() && it->second.isBool() && it->second.toBool();
    };
    return has("avx512_bf16") || has("amx_bf16");
  }();
  return native;
}

std::optional<Precision> precisionFromSpec(const spec::Experiment& spec, const c10::Device& device,
                                           std::string* error) {
  Precision p;
  if (!spec.use_amp()) return p;
  if (spec.amp_dtype() == "fp16" && device.is_cpu()) {
    *error = "amp_dtype: fp16 mixed precision needs a GPU; use bf16 on the CPU";
    return std::nullopt;
  }
  const char* forced = std::getenv("MRCNN_CPU_BF16");
  if (device.is_cpu() && !cpuHasNativeBf16() && !(forced && std::string(forced) == "1")) {
    p.fallback =
        "use_amp: this CPU has no native bf16 (AVX-512 BF16 or AMX), where LibTorch's bf16 "
        "autocast runs several times slower than fp32: running in fp32 (MRCNN_CPU_BF16=1 "
        "keeps bf16)";
    return p;
  }
  p.autocast = true;
  p.dtype = spec.amp_dtype() == "bf16" ? at::kBFloat16 : at::kHalf;
  p.name = spec.amp_dtype();
  return p;
}

}  // namespace mrcnn::engine
