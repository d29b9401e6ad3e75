// Anchors of the RPN: boxes of a few sizes and shapes centred on every cell of every
// feature level. Two parameterisations:
//
// - Torchvision: torchvision's AnchorGenerator, exactly (for parity and for its weights).
//   Per level a list of sizes and aspect ratios r = height / width; a cell anchor of size s
//   has width s / sqrt(r) and height s * sqrt(r), its half-sizes rounded to whole pixels
//   (computed in float32, as torchvision does at construction), centred on 0. The anchor
//   of cell (i, j) is shifted by (j * stride_w, i * stride_h), where stride = padded image
//   size // feature size (integer division: a coarse level whose size was rounded up gets a
//   stride below 2^level, as in torchvision). maskrcnn_resnet50_fpn: sizes 32..512, one per
//   level, ratios (0.5, 1, 2).
//
// - Tao: the experiment spec's (TAO's) anchors. For level l in [min_level, max_level],
//   octave s in [0, num_scales) and aspect pair (a_w, a_h): base = anchor_scale * 2^l *
//   2^(s / num_scales), width = base * a_w, height = base * a_h, not rounded; centres at
//   (stride * (j + 0.5), stride * (i + 0.5)) with stride = 2^l. The pairs are (width,
//   height) factors: (1.4, 0.7) is a wide anchor (height / width = 0.5, area 0.98 base^2),
//   close to torchvision's ratio 0.5 (width sqrt(2) * s, height s / sqrt(2)); (1, 1) is the
//   square base; (0.7, 1.4) is tall (ratio 2). With anchor_scale 8 and levels 2..6 the base
//   sizes are 32..512, as torchvision's.
//
// Order within a level, in both modes: cell major (row major over the feature map), cell
// anchor minor; cell anchors are scale major, aspect minor (Tao: octave major, pair minor;
// Torchvision: ratio major, size minor, as its generate_anchors). Levels are concatenated.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace mrcnn::model {

struct AnchorOptions {
  enum class Mode { Torchvision, Tao };
  Mode mode = Mode::Torchvision;

  // Torchvision mode: per level, the sizes and the ratios (height / width).
  std::vector<std::vector<double>> sizes = {{32}, {64}, {128}, {256}, {512}};
  std::vector<std::vector<double>> aspect_ratios = {
      {0.5, 1.0, 2.0}, {0.5, 1.0, 2.0}, {0.5, 1.0, 2.0}, {0.5, 1.0, 2.0}, {0.5, 1.0, 2.0}};

  // Tao mode (the spec's fields of the same names; aspect_ratios as (width, height) pairs).
  int64_t min_level = 2;
  int64_t max_level = 6;
  int64_t num_scales = 1;
  double anchor_scale = 8.0;
  std::vector<std::pair<double, double>> aspect_pairs = {{1.0, 1.0}, {1.4, 0.7}, {0.7, 1.4}};

  // maskrcnn_resnet50_fpn's anchors.
  static AnchorOptions torchvision() { return {}; }
  // The spec's parameterisation.
  static AnchorOptions tao(int64_t min_level, int64_t max_level, int64_t num_scales,
                           double anchor_scale, std::vector<std::pair<double, double>> pairs);
};

class AnchorGenerator {
 public:
  explicit AnchorGenerator(AnchorOptions options = {});

  const AnchorOptions& options() const { return options_; }
  int64_t numLevels() const { return static_cast<int64_t>(cell_anchors_.size()); }
  // Anchors per feature-map cell, per level.
  std::vector<int64_t> numAnchorsPerLocation() const;
  // The zero-centred cell anchors of a level: [A, 4] float32 (x1, y1, x2, y2).
  const at::Tensor& cellAnchors(int64_t level) const { return cell_anchors_.at(level); }

  // Anchors of each level, [H_l * W_l * A_l, 4] in the dtype and on the device given.
  // grid_sizes: (H_l, W_l) per level; padded_size: (height, width) of the padded batch.
  std::vector<at::Tensor> anchorsPerLevel(const std::vector<std::array<int64_t, 2>>& grid_sizes,
                                          std::array<int64_t, 2> padded_size,
                                          at::TensorOptions options) const;

  // All levels concatenated, for feature maps [N, C, H_l, W_l] (one level each); the same
  // for every image of the batch. dtype and device of the features.
  at::Tensor operator()(const std::vector<at::Tensor>& features,
                        std::array<int64_t, 2> padded_size) const;

 private:
  AnchorOptions options_;
  std::vector<at::Tensor> cell_anchors_;  // per level, [A, 4]; float32 (Torchvision) or double
};

}  // namespace mrcnn::model
