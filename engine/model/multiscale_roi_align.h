// Multi-level RoIAlign, torchvision's MultiScaleRoIAlign: each box is pooled from one level
// of the feature pyramid, chosen by its size (FPN paper, eq. 1):
//   k = clamp(floor(k0 + log2(sqrt(area) / s0) + 1e-6), k_min, k_max)
// with s0 = canonical_scale (224) and k0 = canonical_level (4). Each map's scale is inferred
// from its height against the image height, rounded to a power of two, and k_min, k_max are
// the levels of the first and the last map. RoIAlign is torchvision's (aligned = false).
//
// Two deliberate differences from torchvision that do not change its results: the scales are
// inferred against the padded batch size (torchvision takes the largest image size, which is
// the padded size up to less than the rounding can see), and they are inferred on every call
// (torchvision keeps those of its first call for the module's lifetime).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace mrcnn::model {

struct MultiScaleRoIAlignOptions {
  int64_t output_size = 7;  // pooled height and width
  int64_t sampling_ratio = 2;
  int64_t canonical_scale = 224;
  int64_t canonical_level = 4;
};

// The pyramid geometry inferred from the maps: each map's spatial scale and the levels of
// the first and last map (scale 2^-level).
struct PyramidScales {
  std::vector<double> scales;
  int k_min = 0;
  int k_max = 0;
};

class MultiScaleRoIAlign {
 public:
  static constexpr double kLevelEps = 1e-6;  // torchvision's LevelMapper eps

  explicit MultiScaleRoIAlign(MultiScaleRoIAlignOptions options = {});

  const MultiScaleRoIAlignOptions& options() const { return options_; }

  // features: the maps to pool from, finest first, each [N, C, H_l, W_l] with scale half the
  // previous one's; boxes: per image [P_i, 4] xyxy in image pixels (batch index = position);
  // image_size: the padded batch (height, width). Returns [sum P_i, C, S, S] in the features'
  // dtype, boxes in image order. Differentiable with respect to the features.
  at::Tensor operator()(const std::vector<at::Tensor>& features,
                        const std::vector<at::Tensor>& boxes,
                        const std::array<int64_t, 2>& image_size) const;

  // Each box's map index (0 = features[0]) for a pyramid of levels k_min..k_max: int64
  // [sum P_i].
  at::Tensor levels(const std::vector<at::Tensor>& boxes, int k_min, int k_max) const;

  // Throws when a map's scale is not half the previous one's.
  static PyramidScales inferScales(const std::vector<at::Tensor>& features,
                                   const std::array<int64_t, 2>& image_size);

 private:
  MultiScaleRoIAlignOptions options_;
};

}  // namespace mrcnn::model
