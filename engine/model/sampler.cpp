#include "engine/model/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace mrcnn::model {
namespace {

// One image's draw without reading a count on the host: a random key an element, the
// `max_pos` positives with the largest keys (fewer when there are fewer), then negatives with
// the largest keys up to `batch` in all. Uniform over the subsets of each size, as a
// truncated permutation is.
SampledMasks drawOnDevice(const at::Tensor& l, std::optional<at::Generator> generator,
                          int64_t batch, int64_t max_pos) {
  const int64_t n = l.numel();
  const at::Tensor keys = at::rand({n}, generator, l.options().dtype(at::kFloat));
  const at::Tensor none = at::full({}, -1.0, keys.options());
  SampledMasks m{at::zeros_like(l, l.options().dtype(at::kByte)),
                 at::zeros_like(l, l.options().dtype(at::kByte))};
  const auto [pos_keys, pos_at] = at::topk(at::where(l >= 1, keys, none), std::min(max_pos, n));
  const at::Tensor take_pos = pos_keys >= 0;
  m.positive.scatter_(0, pos_at, take_pos.to(at::kByte));
  const int64_t k = std::min(batch, n);
  const auto [neg_keys, neg_at] = at::topk(at::where(l == 0, keys, none), k);
  const at::Tensor room = batch - take_pos.sum();  // stays on the device
  const at::Tensor take_neg = (neg_keys >= 0) & (at::arange(k, neg_at.options()) < room);
  m.negative.scatter_(0, neg_at, take_neg.to(at::kByte));
  return m;
}

// A generator of `device` seeded with `key`.
at::Generator keyedGenerator(const c10::Device& device, uint64_t key) {
  at::Generator g = device.is_cpu() ? at::make_generator<at::CPUGeneratorImpl>()
                                    : at::globalContext().defaultGenerator(device).clone();
  g.set_current_seed(key);
  return g;
}

}  // namespace

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
    // int() of the product, as torchvision (truncation).
    const auto max_pos = static_cast<int64_t>(static_cast<double>(options_.batch_size_per_image) *
                                              options_.positive_fraction);
    if (options_.draw_on_device || l.is_cuda()) {
      std::optional<at::Generator> generator;  // the device's default
      if (!keys.empty()) {
        generator = keyedGenerator(l.device(), keys[i]);
      } else if (generator_ && generator_->device() == l.device()) {
        generator = generator_;
      }
      out.push_back(drawOnDevice(l, generator, options_.batch_size_per_image, max_pos));
      continue;
    }
    std::optional<at::Generator> generator = generator_;
    if (!keys.empty()) generator = at::make_generator<at::CPUGeneratorImpl>(keys[i]);
    const at::Tensor positive = at::where(l >= 1)[0];
    const at::Tensor negative = at::where(l == 0)[0];
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
