#include "engine/model/multiscale_roi_align.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>

#include "engine/ops/multilevel_roi_align.h"

namespace mrcnn::model {
namespace {

// (batch index, x1, y1, x2, y2) rows of all images' boxes, in image order.
at::Tensor toRois(const std::vector<at::Tensor>& boxes) {
  std::vector<at::Tensor> rows;
  rows.reserve(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    const at::Tensor& b = boxes[i];
    rows.push_back(
        at::cat({at::full({b.size(0), 1}, static_cast<double>(i), b.options()), b}, /*dim=*/1));
  }
  return at::cat(rows, 0);
}

}  // namespace

MultiScaleRoIAlign::MultiScaleRoIAlign(MultiScaleRoIAlignOptions options) : options_(options) {
  TORCH_CHECK(options_.output_size > 0, "MultiScaleRoIAlign: output_size must be positive, got ",
              options_.output_size);
  TORCH_CHECK(options_.canonical_scale > 0,
              "MultiScaleRoIAlign: canonical_scale must be positive, got ",
              options_.canonical_scale);
}

PyramidScales MultiScaleRoIAlign::inferScales(const std::vector<at::Tensor>& features,
                                              const std::array<int64_t, 2>& image_size) {
  TORCH_CHECK(!features.empty(), "MultiScaleRoIAlign: no feature maps");
  TORCH_CHECK(image_size[0] > 0 && image_size[1] > 0, "MultiScaleRoIAlign: empty image size (",
              image_size[0], ", ", image_size[1], ")");
  PyramidScales out;
  std::vector<int> levels;
  for (const at::Tensor& f : features) {
    TORCH_CHECK(f.dim() == 4, "MultiScaleRoIAlign: feature maps must be [N, C, H, W], got ",
                f.sizes());
    // As torchvision: the height ratio, its log2 in float rounded half to even, a power of 2.
    const auto ratio =
        static_cast<float>(static_cast<double>(f.size(2)) / static_cast<double>(image_size[0]));
    const int level = -static_cast<int>(std::nearbyint(std::log2(ratio)));
    TORCH_CHECK(levels.empty() || level == levels.back() + 1, "MultiScaleRoIAlign: feature map ",
                levels.size(), " (", f.sizes(),
                ") is not half the size of the previous one for an image of ", image_size[0], "x",
                image_size[1]);
    levels.push_back(level);
    out.scales.push_back(std::ldexp(1.0, -level));
  }
  out.k_min = levels.front();
  out.k_max = levels.back();
  return out;
}

at::Tensor MultiScaleRoIAlign::levels(const std::vector<at::Tensor>& boxes, int k_min,
                                      int k_max) const {
  TORCH_CHECK(!boxes.empty(), "MultiScaleRoIAlign: no images");
  std::vector<at::Tensor> areas;
  areas.reserve(boxes.size());
  for (const at::Tensor& b : boxes) {
    areas.push_back((b.select(1, 2) - b.select(1, 0)) * (b.select(1, 3) - b.select(1, 1)));
  }
  // The same operations in the same dtype as torchvision's LevelMapper, so that a box on a
  // level boundary lands where torchvision puts it.
  const at::Tensor s = at::sqrt(at::cat(areas, 0));
  const at::Tensor k = at::floor(at::log2(s / options_.canonical_scale) + options_.canonical_level +
                                 at::scalar_tensor(kLevelEps, s.options()));
  return k.clamp(k_min, k_max).to(at::kLong) - k_min;
}

at::Tensor MultiScaleRoIAlign::operator()(const std::vector<at::Tensor>& features,
                                          const std::vector<at::Tensor>& boxes,
                                          const std::array<int64_t, 2>& image_size) const {
  const PyramidScales pyramid = inferScales(features, image_size);
  const int64_t num_images = features[0].size(0);
  TORCH_CHECK(static_cast<int64_t>(boxes.size()) == num_images, "MultiScaleRoIAlign: boxes for ",
              boxes.size(), " images in a batch of ", num_images);
  for (const at::Tensor& b : boxes) {
    TORCH_CHECK(b.dim() == 2 && b.size(1) == 4, "MultiScaleRoIAlign: boxes must be [P, 4], got ",
                b.sizes());
  }
  const int64_t s = options_.output_size;
  // The RoIs keep the boxes' precision (float under autocast too, as in torchvision): the
  // kernels read them in the precision they compute in. (Until 2026-11-30 they were rounded to
  // the maps' dtype first: under bf16 autocast a box edge near 800 px moved by up to 2 px.)
  const at::Tensor rois = toRois(boxes);

  // One op over all levels (one map: every RoI on it), each RoI on its own map: the RoIs are
  // not split by level, so the host never waits to learn how many each level has. Every map
  // gets a gradient, zero where no box reads it (as torchvision's per-level pooling gives).
  std::vector<at::Tensor> maps;
  maps.reserve(features.size());
  for (const at::Tensor& f : features) {
    // Maps may differ in dtype under autocast: the result keeps the first map's.
    maps.push_back(f.to(features[0].scalar_type()));
  }
  return ops::multilevel_roi_align(maps, rois, levels(boxes, pyramid.k_min, pyramid.k_max),
                                   pyramid.scales, s, s, options_.sampling_ratio,
                                   /*aligned=*/false);
}

}  // namespace mrcnn::model
