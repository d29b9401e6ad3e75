#include "engine/model/matcher.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

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

  const at::Tensor below = best_quality < options_.low_threshold;
  const at::Tensor between =
      (best_quality >= options_.low_threshold) & (best_quality < options_.high_threshold);
  matches.masked_fill_(below, kBelowLowThreshold);
  matches.masked_fill_(between, kBetweenThresholds);

  if (options_.allow_low_quality_matches) {
    // Every prediction that is some ground truth's best (ties included) gets its own best
    // ground truth back, even if that is a different one.
    const at::Tensor best_of_gt = std::get<0>(quality.max(/*dim=*/1));
    const at::Tensor is_best = (quality == best_of_gt.unsqueeze(1)).any(/*dim=*/0);
    matches = at::where(is_best, best_gt, matches);
  }
  return matches;
}

}  // namespace mrcnn::model
