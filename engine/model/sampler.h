// Samples a fixed number of labelled elements per image with at most a given share of
// positives, as torchvision's det_utils.BalancedPositiveNegativeSampler.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace mrcnn::model {

struct SamplerOptions {
  int64_t batch_size_per_image = 256;
  double positive_fraction = 0.5;
  // The draw as a selection of fixed size on the labels' device: each element a random key
  // (from a generator of that device), the positives and negatives with the largest keys
  // taken, the counts never read on the host. The same distribution as torchvision's
  // permutations but not the same elements; no host synchronisation. Always so for labels on
  // a GPU; on the CPU only when set (torchvision's permutations otherwise).
  bool draw_on_device = false;
};

// Binary (uint8) masks over one image's elements: those sampled as positive, as negative.
struct SampledMasks {
  at::Tensor positive;
  at::Tensor negative;
};

class BalancedPositiveNegativeSampler {
 public:
  // generator: the random source of the permutations (CPU); none means ATen's default
  // generator (torch::manual_seed). With the same generator state the same elements are
  // drawn as torchvision's sampler draws with torch.randperm on the CPU.
  explicit BalancedPositiveNegativeSampler(SamplerOptions options = {},
                                           std::optional<at::Generator> generator = std::nullopt);

  const SamplerOptions& options() const { return options_; }

  // labels per image: >= 1 positive, 0 negative, anything else (-1) ignored. Per image
  // samples min(#positive, int(batch * fraction)) positives and fills up to the batch size
  // with negatives (as many as there are).
  // keys (one per image, optional): image i's permutations are drawn from a generator seeded
  // with keys[i] instead of the shared one, so what an image samples does not depend on the
  // images before it in the batch (data-parallel ranks split batches; see MaskRCNNTargets).
  // Drawn on a device (SamplerOptions::draw_on_device), a key seeds a generator of that
  // device: every device of one type draws the same elements for the same key.
  std::vector<SampledMasks> operator()(const std::vector<at::Tensor>& labels,
                                       const std::vector<uint64_t>& keys = {});

 private:
  SamplerOptions options_;
  std::optional<at::Generator> generator_;
};

}  // namespace mrcnn::model
