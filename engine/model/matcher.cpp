#include "engine/model/matcher.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "engine/ops/box_iou.h"

namespace mrcnn::model {

Matcher::Matcher(MatcherOptions options) : options_(options) {
  TORCH_CHECK(options_.low_threshold <= options_.high_threshold, "Matcher: low_threshold (",
              options_.low_threshold, ") must not exceed high_threshold (", options_.high_threshold,
              ")");
}

at::Tensor Matcher::operator()(const at::Tensor& quality) const {
  TORCH_CHECK(quality.dim() == 2, "Matcher: the quality matrix must be [M, N], got ",
              quality.sizes());
  TORCH_CHECK(quality.size(0) > 0,
              "Matcher: no ground-truth boxes available for one of the images during training");
  TORCH_CHECK(quality.size(1) > 0,
              "Matcher: no proposal boxes available for one of the images during training");

  // Best ground truth of each prediction (the first one on ties, as at::max reports it).
  auto [best_quality, matches] = quality.max(/*dim=*/0);
  const at::Tensor best_gt = options_.allow_low_quality_matches ? matches.clone() : at::Tensor();

  applyThresholds(best_quality, matches);

  if (options_.allow_low_quality_matches) {
    // Every prediction that is some ground truth's best (ties included) gets its own best
    // ground truth back, even if that is a different one.
    const at::Tensor best_of_gt = std::get<0>(quality.max(/*dim=*/1));
    const at::Tensor is_best = (quality == best_of_gt.unsqueeze(1)).any(/*dim=*/0);
    matches = at::where(is_best, best_gt, matches);
  }
  return matches;
}

void Matcher::applyThresholds(const at::Tensor& best_quality, at::Tensor& matches) const {
  const at::Tensor below = best_quality < options_.low_threshold;
  const at::Tensor between =
      (best_quality >= options_.low_threshold) & (best_quality < options_.high_threshold);
  matches.masked_fill_(below, kBelowLowThreshold);
  matches.masked_fill_(between, kBetweenThresholds);
}

at::Tensor Matcher::matchBoxes(const at::Tensor& ground_truth, const at::Tensor& predictions,
                               int64_t block_elements) const {
  const int64_t m = ground_truth.size(0), n = predictions.size(0);
  TORCH_CHECK(m > 0, "Matcher: no ground-truth boxes available for one of the images during training");
  TORCH_CHECK(n > 0, "Matcher: no proposal boxes available for one of the images during training");
  const int64_t block = std::max<int64_t>(1, block_elements / m);
  if (block >= n) return (*this)(ops::box_iou(ground_truth, predictions));

  // The results are allocated once, before the blocks: small tensors kept from one block to
  // the next would be carved out of the freed block's memory, so that the next block could
  // not reuse it and the heap would grow by a block each time (to the whole matrix's size).
  const at::TensorOptions on = predictions.options();
  at::Tensor best_quality = at::empty({n}, ground_truth.options());
  at::Tensor matches = at::empty({n}, on.dtype(at::kLong));
  at::Tensor best_of_gt;
  // First pass: each prediction's best ground truth; each ground truth's best quality.
  for (int64_t start = 0; start < n; start += block) {
    const int64_t count = std::min(block, n - start);
    const at::Tensor q = ops::box_iou(ground_truth, predictions.narrow(0, start, count));
    auto [best, index] = q.max(/*dim=*/0);
    best_quality.narrow(0, start, count).copy_(best);
    matches.narrow(0, start, count).copy_(index);
    if (options_.allow_low_quality_matches) {
      const at::Tensor gt_best = std::get<0>(q.max(/*dim=*/1));
      if (best_of_gt.defined()) {
        best_of_gt.copy_(at::maximum(best_of_gt, gt_best));
      } else {
        best_of_gt = gt_best.clone();
      }
    }
  }
  const at::Tensor best_gt = options_.allow_low_quality_matches ? matches.clone() : at::Tensor();
  applyThresholds(best_quality, matches);
  if (!options_.allow_low_quality_matches) return matches;

  // Second pass: the predictions that are some ground truth's best, ties included.
  at::Tensor is_best = at::empty({n}, on.dtype(at::kBool));
  for (int64_t start = 0; start < n; start += block) {
    const int64_t count = std::min(block, n - start);
    const at::Tensor q = ops::box_iou(ground_truth, predictions.narrow(0, start, count));
    is_best.narrow(0, start, count).copy_((q == best_of_gt.unsqueeze(1)).any(/*dim=*/0));
  }
  return at::where(is_best, best_gt, matches);
}

}  // namespace mrcnn::model
