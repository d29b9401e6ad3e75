#include "engine/export/detection_parity.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace mrcnn::exporter {
namespace {

double boxIoU(const float* a, const float* b) {
  const double ix = std::max(0.0, static_cast<double>(std::min(a[2], b[2]) - std::max(a[0], b[0])));
  const double iy = std::max(0.0, static_cast<double>(std::min(a[3], b[3]) - std::max(a[1], b[1])));
  const double inter = ix * iy;
  const double uni = static_cast<double>((a[2] - a[0]) * (a[3] - a[1])) +
                     static_cast<double>((b[2] - b[0]) * (b[3] - b[1])) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

double maskIoU(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kBool), y = b.to(at::kBool);
  const double uni = static_cast<double>((x | y).sum().item<int64_t>());
  if (uni == 0) return 1.0;
  return static_cast<double>((x & y).sum().item<int64_t>()) / uni;
}

}  // namespace

ImageParity compareDetections(const model::ImageDetections& ours,
                              const model::ImageDetections& reference,
                              const ParityTolerance& tolerance) {
  ImageParity p;
  p.ours = ours.boxes.size(0);
  p.reference = reference.boxes.size(0);
  const at::Tensor ob = ours.boxes.to(at::kFloat).contiguous();
  const at::Tensor rb = reference.boxes.to(at::kFloat).contiguous();
  const at::Tensor ol = ours.labels.to(at::kLong).contiguous();
  const at::Tensor rl = reference.labels.to(at::kLong).contiguous();
  const at::Tensor os = ours.scores.to(at::kFloat).contiguous();
  const at::Tensor rs = reference.scores.to(at::kFloat).contiguous();
  const bool masks = ours.masks.defined() && reference.masks.defined();

  std::vector<int64_t> order(static_cast<size_t>(p.reference));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return rs.data_ptr<float>()[a] > rs.data_ptr<float>()[b];
  });
  std::vector<bool> used(static_cast<size_t>(p.ours), false);
  for (int64_t r : order) {
    const float* rbox = rb.data_ptr<float>() + 4 * r;
    int64_t best = -1;
    double best_iou = 0.5;
    for (int64_t k = 0; k < p.ours; ++k) {
      if (used[static_cast<size_t>(k)] || ol.data_ptr<int64_t>()[k] != rl.data_ptr<int64_t>()[r])
        continue;
      const double v = boxIoU(ob.data_ptr<float>() + 4 * k, rbox);
      if (v >= best_iou) {
        best = k;
        best_iou = v;
      }
    }
    if (best < 0) continue;
    used[static_cast<size_t>(best)] = true;
    ++p.paired;
    const float* obox = ob.data_ptr<float>() + 4 * best;
    double box_rel = 0;
    for (int c = 0; c < 4; ++c) {
      box_rel = std::max(box_rel, std::abs(static_cast<double>(obox[c] - rbox[c])) /
                                      std::max(1.0, std::abs(static_cast<double>(rbox[c]))));
    }
    const double score =
        std::abs(static_cast<double>(os.data_ptr<float>()[best] - rs.data_ptr<float>()[r]));
    const double miou = masks ? maskIoU(ours.masks[best], reference.masks[r]) : 1.0;
    p.worst_box_rel = std::max(p.worst_box_rel, box_rel);
    p.worst_score = std::max(p.worst_score, score);
    p.worst_mask_iou = std::min(p.worst_mask_iou, miou);
    if (box_rel <= tolerance.box_rel && score <= tolerance.score && miou >= tolerance.mask_iou)
      ++p.agreed;
  }
  return p;
}

}  // namespace mrcnn::exporter
