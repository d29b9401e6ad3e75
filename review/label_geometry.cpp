#include "review/label_geometry.h"

#include <algorithm>
#include <cmath>

namespace mrcnn::review {
namespace {

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// A measure's negative log likelihood under a Laplace distribution around the class's median,
// the distance term at most kCap (one odd measure does not outvote the others for good).
double nll(double x, double median, double scale) {
  constexpr double kCap = 6;
  return std::min(kCap, std::abs(x - median) / scale) + std::log(2 * scale);
}

}  // namespace

LabelGeometry::LabelGeometry(const std::vector<eval::GroundTruth>& annotations, bool masks,
                             size_t min_annotations)
    : masks_(masks) {
  std::map<int64_t, std::array<std::vector<double>, kMeasures>> values;
  for (const eval::GroundTruth& g : annotations) {
    if (g.iscrowd || cutByTheBorder(g)) continue;
    const auto m = measures(g);
    for (size_t k = 0; k < kMeasures; ++k)
      if (std::isfinite(m[k])) values[g.category_id][k].push_back(m[k]);
  }
  for (const auto& [category, v] : values) {
    std::array<Usual, kMeasures> usual;
    bool any = false;
    for (size_t k = 0; k < kMeasures; ++k) {
      if (v[k].size() < min_annotations) continue;
      usual[k].median = median(v[k]);
      std::vector<double> deviations;
      deviations.reserve(v[k].size());
      for (const double x : v[k]) deviations.push_back(std::abs(x - usual[k].median));
      // The median absolute deviation as a Laplace scale (mad / ln 2), at least 0.02 / ln 2.
      usual[k].scale = std::max(0.02, median(std::move(deviations))) / std::log(2.0);
      any = true;
    }
    if (any) usual_[category] = usual;
  }
}

std::array<double, LabelGeometry::kMeasures> LabelGeometry::measures(const eval::GroundTruth& g) const {
  const double nan = std::nan("");
  const double w = g.bbox[2], h = g.bbox[3];
  if (w <= 0 || h <= 0) return {nan, nan, nan};
  const bool has_mask = masks_ && g.mask.h > 0 && g.mask.w > 0;
  const double fill = has_mask ? static_cast<double>(dataset::area(g.mask)) / (w * h) : nan;
  return {std::log(w / h), fill, 0.5 * std::log(w * h)};
}

bool LabelGeometry::cutByTheBorder(const eval::GroundTruth& g) {
  if (g.mask.h == 0 || g.mask.w == 0) return false;  // no image size known
  constexpr double kEdge = 0.5;
  const auto& b = g.bbox;
  return b[0] <= kEdge || b[1] <= kEdge || b[0] + b[2] >= static_cast<double>(g.mask.w) - kEdge ||
         b[1] + b[3] >= static_cast<double>(g.mask.h) - kEdge;
}

double LabelGeometry::vote(const eval::GroundTruth& annotation, int64_t other) const {
  const auto own = usual_.find(annotation.category_id), alt = usual_.find(other);
  if (own == usual_.end() || alt == usual_.end() || cutByTheBorder(annotation)) return 0.5;
  const auto m = measures(annotation);
  double log_ratio = 0;  // log p(outline | other) - log p(outline | own)
  for (size_t k = 0; k < kMeasures; ++k) {
    const Usual &a = own->second[k], &b = alt->second[k];
    if (a.scale <= 0 || b.scale <= 0 || !std::isfinite(m[k])) continue;
    log_ratio += nll(m[k], a.median, a.scale) - nll(m[k], b.median, b.scale);
  }
  return 1 / (1 + std::exp(-log_ratio));
}

}  // namespace mrcnn::review
