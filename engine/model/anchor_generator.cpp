#include "engine/model/anchor_generator.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace mrcnn::model {
namespace {

// torchvision's generate_anchors, step by step in float32 so that the rounding of the
// half-sizes lands where torchvision's does.
at::Tensor torchvisionCellAnchors(const std::vector<double>& sizes,
                                  const std::vector<double>& ratios) {
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor scales = at::tensor(std::vector<float>(sizes.begin(), sizes.end()), f32);
  const at::Tensor r = at::tensor(std::vector<float>(ratios.begin(), ratios.end()), f32);
  const at::Tensor h_ratios = at::sqrt(r);
  const at::Tensor w_ratios = 1 / h_ratios;
  const at::Tensor ws = (w_ratios.unsqueeze(1) * scales.unsqueeze(0)).reshape(-1);
  const at::Tensor hs = (h_ratios.unsqueeze(1) * scales.unsqueeze(0)).reshape(-1);
  return (at::stack({-ws, -hs, ws, hs}, /*dim=*/1) / 2).round();
}

// The spec's cell anchors, in double: octave major, aspect pair minor.
at::Tensor taoCellAnchors(const AnchorOptions& o, int64_t level) {
  std::vector<double> v;
  for (int64_t s = 0; s < o.num_scales; ++s) {
    const double base = o.anchor_scale * std::ldexp(1.0, static_cast<int>(level)) *
                        std::pow(2.0, static_cast<double>(s) / static_cast<double>(o.num_scales));
    for (const auto& [aw, ah] : o.aspect_pairs) {
      const double hw = base * aw / 2.0, hh = base * ah / 2.0;
      v.insert(v.end(), {-hw, -hh, hw, hh});
    }
  }
  return at::tensor(v, at::TensorOptions().dtype(at::kDouble)).reshape({-1, 4});
}

}  // namespace

AnchorOptions AnchorOptions::tao(int64_t min_level, int64_t max_level, int64_t num_scales,
                                 double anchor_scale,
                                 std::vector<std::pair<double, double>> pairs) {
  AnchorOptions o;
  o.mode = Mode::Tao;
  o.min_level = min_level;
  o.max_level = max_level;
  o.num_scales = num_scales;
  o.anchor_scale = anchor_scale;
  o.aspect_pairs = std::move(pairs);
  return o;
}

AnchorGenerator::AnchorGenerator(AnchorOptions options) : options_(std::move(options)) {
  const AnchorOptions& o = options_;
  if (o.mode == AnchorOptions::Mode::Torchvision) {
    TORCH_CHECK(!o.sizes.empty() && o.sizes.size() == o.aspect_ratios.size(),
                "AnchorGenerator: sizes and aspect_ratios need one entry per feature level (got ",
                o.sizes.size(), " and ", o.aspect_ratios.size(), ")");
    for (size_t l = 0; l < o.sizes.size(); ++l) {
      TORCH_CHECK(!o.sizes[l].empty() && !o.aspect_ratios[l].empty(), "AnchorGenerator: level ", l,
                  " has no sizes or no aspect ratios");
      for (double r : o.aspect_ratios[l])
        TORCH_CHECK(r > 0, "AnchorGenerator: aspect ratio ", r, " must be > 0");
      cell_anchors_.push_back(torchvisionCellAnchors(o.sizes[l], o.aspect_ratios[l]));
    }
  } else {
    TORCH_CHECK(o.min_level >= 0 && o.min_level <= o.max_level && o.max_level < 30,
                "AnchorGenerator: need 0 <= min_level <= max_level < 30 (got ", o.min_level, ", ",
                o.max_level, ")");
    TORCH_CHECK(o.num_scales >= 1, "AnchorGenerator: num_scales must be >= 1, got ", o.num_scales);
    TORCH_CHECK(o.anchor_scale > 0, "AnchorGenerator: anchor_scale must be > 0, got ",
                o.anchor_scale);
    TORCH_CHECK(!o.aspect_pairs.empty(), "AnchorGenerator: no aspect ratios");
    for (const auto& [aw, ah] : o.aspect_pairs)
      TORCH_CHECK(aw > 0 && ah > 0, "AnchorGenerator: aspect pair (", aw, ", ", ah,
                  ") must be positive");
    for (int64_t l = o.min_level; l <= o.max_level; ++l)
      cell_anchors_.push_back(taoCellAnchors(o, l));
  }
}

std::vector<int64_t> AnchorGenerator::numAnchorsPerLocation() const {
  std::vector<int64_t> n;
  for (const at::Tensor& c : cell_anchors_)
    n.push_back(c.size(0));
  return n;
}

std::vector<at::Tensor> AnchorGenerator::anchorsPerLevel(
    const std::vector<std::array<int64_t, 2>>& grid_sizes, std::array<int64_t, 2> padded_size,
    at::TensorOptions options) const {
  TORCH_CHECK(static_cast<int64_t>(grid_sizes.size()) == numLevels(),
              "AnchorGenerator: ", grid_sizes.size(), " feature maps for ", numLevels(),
              " anchor levels (sizes / aspect ratios, or min_level..max_level)");
  const bool tao = options_.mode == AnchorOptions::Mode::Tao;
  const at::TensorOptions idx = options.dtype(at::kLong);
  std::vector<at::Tensor> anchors;
  for (size_t l = 0; l < grid_sizes.size(); ++l) {
    const auto [gh, gw] = grid_sizes[l];
    TORCH_CHECK(gh > 0 && gw > 0, "AnchorGenerator: empty feature map at level ", l);
    if (tao) {
      // Centres at (cell + 0.5) * 2^level, computed in double, rounded once to the dtype.
      const double stride =
          std::ldexp(1.0, static_cast<int>(options_.min_level) + static_cast<int>(l));
      const at::TensorOptions f64 = options.dtype(at::kDouble);
      const at::Tensor sx = (at::arange(gw, f64) + 0.5) * stride;
      const at::Tensor sy = (at::arange(gh, f64) + 0.5) * stride;
      const std::vector<at::Tensor> grid = at::meshgrid({sy, sx}, "ij");
      const at::Tensor x = grid[1].reshape(-1), y = grid[0].reshape(-1);
      const at::Tensor shifts = at::stack({x, y, x, y}, /*dim=*/1);
      const at::Tensor cell = cell_anchors_[l].to(f64);
      anchors.push_back(
          (shifts.view({-1, 1, 4}) + cell.view({1, -1, 4})).reshape({-1, 4}).to(options));
    } else {
      // torchvision: integer shifts of the rounded cell anchors, in the features' dtype.
      const int64_t stride_h = padded_size[0] / gh, stride_w = padded_size[1] / gw;
      const at::Tensor sx = at::arange(gw, idx) * stride_w;
      const at::Tensor sy = at::arange(gh, idx) * stride_h;
      const std::vector<at::Tensor> grid = at::meshgrid({sy, sx}, "ij");
      const at::Tensor x = grid[1].reshape(-1), y = grid[0].reshape(-1);
      const at::Tensor shifts = at::stack({x, y, x, y}, /*dim=*/1).to(options);
      const at::Tensor cell = cell_anchors_[l].to(options);
      anchors.push_back((shifts.view({-1, 1, 4}) + cell.view({1, -1, 4})).reshape({-1, 4}));
    }
  }
  return anchors;
}

at::Tensor AnchorGenerator::operator()(const std::vector<at::Tensor>& features,
                                       std::array<int64_t, 2> padded_size) const {
  TORCH_CHECK(!features.empty(), "AnchorGenerator: no feature maps");
  std::vector<std::array<int64_t, 2>> grid_sizes;
  for (const at::Tensor& f : features) {
    TORCH_CHECK(f.dim() == 4, "AnchorGenerator: feature maps must be [N, C, H, W], got ",
                f.sizes());
    grid_sizes.push_back({f.size(2), f.size(3)});
  }
  // Under autocast the features are bfloat16 or half; anchors stay float (bfloat16 holds
  // pixel coordinates past 256 only to a few pixels).
  at::TensorOptions options = features[0].options();
  if (at::isReducedFloatingType(features[0].scalar_type())) options = options.dtype(at::kFloat);
  return at::cat(anchorsPerLevel(grid_sizes, padded_size, options), 0);
}

}  // namespace mrcnn::model
