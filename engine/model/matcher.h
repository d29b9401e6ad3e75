// Assigns each prediction (anchor or proposal) to at most one ground-truth box by a quality
// matrix (IoU), as torchvision's det_utils.Matcher.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace mrcnn::model {

struct MatcherOptions {
  double high_threshold = 0.7;  // quality >= high: a match (foreground)
  double low_threshold = 0.3;   // quality < low: background; in between: ignored
  // Also match every prediction whose quality with some ground truth is that ground truth's
  // best (ties included), to its own best ground truth, whatever the thresholds say.
  bool allow_low_quality_matches = false;
};

class Matcher {
 public:
  static constexpr int64_t kBelowLowThreshold = -1;
  static constexpr int64_t kBetweenThresholds = -2;

  explicit Matcher(MatcherOptions options = {});

  const MatcherOptions& options() const { return options_; }

  // quality: [M ground truths, N predictions]. Returns int64 [N]: the matched ground truth
  // (0..M-1), kBelowLowThreshold or kBetweenThresholds. Throws on an empty matrix (no
  // ground truth or no predictions: the callers handle those before matching).
  at::Tensor operator()(const at::Tensor& quality) const;
  // The same matches for the IoU of `predictions` [N, 4] with `ground_truth` [M, 4], the
  // matrix computed a block of predictions at a time (at most about `block_elements` IoUs at
  // once): memory O(M x block) instead of O(M x N), for images with many objects (800 boxes
  // against 200,000 anchors would be a 640 MB matrix). Same result as
  // (*this)(box_iou(ground_truth, predictions)), bit for bit.
  at::Tensor matchBoxes(const at::Tensor& ground_truth, const at::Tensor& predictions,
                        int64_t block_elements = int64_t{1} << 23) const;

 private:
  // Thresholds applied to each prediction's best quality, in place on `matches`.
  void applyThresholds(const at::Tensor& best_quality, at::Tensor& matches) const;

  MatcherOptions options_;
};

}  // namespace mrcnn::model
