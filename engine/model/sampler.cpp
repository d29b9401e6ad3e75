#include "engine/model/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace mrcnn::model {
namespace {

// The draw of a batch without reading a count on the host: a random key an element, each
// image's `max_pos` positives with the largest keys (fewer when there are fewer), then its
// negatives with the largest keys up to `batch` in all. Uniform over the subsets of each size,
// as a truncated permutation is. `keys[i]` holds image i's keys in its first n_i elements;
// `labels` is [B, N] with -1 (neither) past an image's end. A few operations for the whole
// batch (on a GPU that many kernels, not that many an image).
std::pair<at::Tensor, at::Tensor> drawOnDevice(const at::Tensor& labels, const at::Tensor& keys,
                                               int64_t batch, int64_t max_pos) {
  const int64_t n = labels.size(1);
  const at::Tensor none = at::full({}, -1.0, keys.options());
  at::Tensor positive = at::zeros_like(labels, labels.options().dtype(at::kByte));
  at::Tensor negative = at::zeros_like(positive);
  const auto [pos_keys, pos_at] =
      at::topk(at::where(labels >= 1, keys, none), std::min(max_pos, n), /*dim=*/1);
  const at::Tensor take_pos = pos_keys >= 0;
  positive.scatter_(1, pos_at, take_pos.to(at::kByte));
  const int64_t k = std::min(batch, n);
  const auto [neg_keys, neg_at] = at::topk(at::where(labels == 0, keys, none), k, /*dim=*/1);
  const at::Tensor room = batch - take_pos.sum(1, /*keepdim=*/true);  // stays on the device
  const at::Tensor take_neg = (neg_keys >= 0) & (at::arange(k, neg_at.options()) < room);
  negative.scatter_(1, neg_at, take_neg.to(at::kByte));
  return {positive, negative};
}

// A generator of `device` seeded with `key`.
at::Generator keyedGenerator(const c10::Device& device, uint64_t key) {
  at::Generator g = device.is_cpu() ? at::make_generator<at::CPUGeneratorImpl>()
                                    : at::globalContext().defaultGenerator(device).clone();
  g.set_current_seed(key);
  return g;
}

// The device draw of a batch (drawOnDevice) from per-image labels: the images side by side,
// each padded to the longest with -1 (neither positive nor negative), one fill and one
// concatenation for the labels and one for the keys; image i's keys from a generator seeded
// with keys[i] when given, else `shared` when it is of the labels' device, else the device's.
std::vector<SampledMasks> drawBatchOnDevice(const std::vector<at::Tensor>& labels,
                                            const std::vector<uint64_t>& keys,
                                            const std::optional<at::Generator>& shared,
                                            int64_t batch_size, int64_t max_pos) {
  std::vector<SampledMasks> out;
  int64_t longest = 0;
  for (const at::Tensor& l : labels)
    longest = std::max(longest, l.numel());
  const at::Device device = labels.front().device();
  const at::Tensor pad = at::full({longest}, -1, labels.front().options());
  const at::Tensor key_pad = at::zeros({longest}, pad.options().dtype(at::kFloat));  // unread
  std::vector<at::Tensor> padded_labels, padded_keys;
  for (size_t i = 0; i < labels.size(); ++i) {
    const at::Tensor& l = labels[i];
    TORCH_CHECK(l.dim() == 1 && l.device() == device && l.scalar_type() == pad.scalar_type(),
                "BalancedPositiveNegativeSampler: image ", i, "'s labels are ", l.sizes(), " ",
                l.scalar_type(), " on ", l.device(), "; image 0's ", pad.scalar_type(), " on ",
                device, " (1-D, one dtype and device for the batch)");
    padded_labels.push_back(l);
    padded_labels.push_back(pad.narrow(0, 0, longest - l.numel()));
    std::optional<at::Generator> generator;  // the device's default
    if (!keys.empty()) {
      generator = keyedGenerator(device, keys[i]);
    } else if (shared && shared->device() == device) {
      generator = shared;
    }
    // Each image's keys from its own generator, as many as it has elements: an image draws
    // the same elements whatever the images beside it.
    padded_keys.push_back(at::rand({l.numel()}, generator, key_pad.options()));
    padded_keys.push_back(key_pad.narrow(0, 0, longest - l.numel()));
  }
  const auto batch = static_cast<int64_t>(labels.size());
  const auto [positive, negative] =
      drawOnDevice(at::cat(padded_labels).view({batch, longest}),
                   at::cat(padded_keys).view({batch, longest}), batch_size,
                   max_pos);
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto row = static_cast<int64_t>(i);
    out.push_back({positive.select(0, row).narrow(0, 0, labels[i].numel()),
                   negative.select(0, row).narrow(0, 0, labels[i].numel())});
  }
  return out;
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
  // int() of the product, as torchvision (truncation).
  const auto max_pos = static_cast<int64_t>(static_cast<double>(options_.batch_size_per_image) *
                                            options_.positive_fraction);
  const bool on_device = options_.draw_on_device ||
                         std::any_of(labels.begin(), labels.end(),
                                     [](const at::Tensor& l) { return l.is_cuda(); });
  if (on_device && !labels.empty())
    return drawBatchOnDevice(labels, keys, generator_, options_.batch_size_per_image, max_pos);
  for (size_t i = 0; i < labels.size(); ++i) {
    const at::Tensor& l = labels[i];
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
