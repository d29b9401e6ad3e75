#include "engine/setup/precision.h"

namespace mrcnn::engine {

std::optional<Precision> precisionFromSpec(const spec::Experiment& spec, const c10::Device& device,
                                           std::string* error) {
  Precision p;
  if (!spec.use_amp()) return p;
  if (spec.amp_dtype() == "fp16" && device.is_cpu()) {
    *error = "amp_dtype: fp16 mixed precision needs a GPU; use bf16 on the CPU";
    return std::nullopt;
  }
  p.autocast = true;
  p.dtype = spec.amp_dtype() == "bf16" ? at::kBFloat16 : at::kHalf;
  p.name = spec.amp_dtype();
  return p;
}

}  // namespace mrcnn::engine
