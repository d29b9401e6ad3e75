#include "engine/model/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace mrcnn::model {

BalancedPositiveNegativeSampler::BalancedPositiveNegativeSampler(
    SamplerOptions options, std::optional<at::Generator> generator)
    : options_(options), generator_(std::move(generator)) {
  TORCH_CHECK(options_.batch_size_per_image >= 0,
              "BalancedPositiveNegativeSampler: batch_size_per_image must be >= 0, got ",
              options_.batch_size_per_image);
  TORCH_CHECK(options_.positive_fraction >= 0 && options_.positive_fraction <= 1,
              "BalancedPositiveNegativeSampler: positive_fraction must be in [0, 1], got ",
              options_.positive_fraction);
}

std::vector<SampledMasks> BalancedPositiveNegativeSampler::operator()(
    const std::vector<at::Tensor>& labels, const std::vector<uint64_t>& keys) {
  TORCH_CHECK(keys.empty() || keys.size() == labels.size(),
              "BalancedPositiveNegativeSampler: ", keys.size(), " keys for ", labels.size(),
              " images");
  std::vector<SampledMasks> out;
  out.reserve(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    const at::Tensor& l = labels[i];
    std::optional<at::Generator> generator = generator_;
    if (!keys.empty()) generator = at::make_generator<at::CPUGeneratorImpl>(keys[i]);
    const at::Tensor positive = at::where(l >= 1)[0];
    const at::Tensor negative = at::where(l == 0)[0];
    // int() of the product, as torchvision (truncation).
    const auto max_pos = static_cast<int64_t>(static_cast<double>(options_.batch_size_per_image) *
                                              options_.positive_fraction);
    const int64_t num_pos = std::min(positive.numel(), max_pos);
    const int64_t num_neg = std::min(negative.numel(), options_.batch_size_per_image - num_pos);

    // Permutations drawn on the CPU (the generator is a CPU one), in torchvision's order:
    // the positives' first.
    const at::TensorOptions cpu_long = at::TensorOptions().dtype(at::kLong);
    const at::Tensor perm_pos =
        at::randperm(positive.numel(), generator, cpu_long).narrow(0, 0, num_pos).to(l.device());
    const at::Tensor perm_neg =
        at::randperm(negative.numel(), generator, cpu_long).narrow(0, 0, num_neg).to(l.device());

    SampledMasks m{at::zeros_like(l, l.options().dtype(at::kByte)),
                   at::zeros_like(l, l.options().dtype(at::kByte))};
    m.positive.index_fill_(0, positive.index_select(0, perm_pos), 1);
    m.negative.index_fill_(0, negative.index_select(0, perm_neg), 1);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace mrcnn::model
