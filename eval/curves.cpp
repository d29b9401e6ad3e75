#include "eval/curves.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mrcnn::eval {
namespace {

struct Slice {
  std::size_t t, a, m;
};

// The indices of the IoU threshold `iou`, the area range "all" and the largest maxDets.
Slice sliceAt(const EvalResult& r, double iou) {
  Slice s{r.T, 0, r.M - 1};
  for (std::size_t t = 0; t < r.params.iou_thresholds.size(); ++t) {
    if (std::abs(r.params.iou_thresholds[t] - iou) < 1e-9) s.t = t;
  }
  if (s.t >= r.T || r.M == 0) {
    throw std::invalid_argument("the evaluation has no IoU threshold " + std::to_string(iou));
  }
  for (std::size_t a = 0; a < r.params.area_labels.size(); ++a) {
    if (r.params.area_labels[a] == "all") s.a = a;
  }
  return s;
}

// One of the [T][R][K][A][M] arrays (precision or scores) over the recall thresholds.
std::vector<double> curveOf(const EvalResult& r, const std::vector<double>& values, std::size_t k,
                            double iou) {
  const Slice s = sliceAt(r, iou);
  std::vector<double> curve(r.R);
  for (std::size_t i = 0; i < r.R; ++i)
    curve[i] = values[(((s.t * r.R + i) * r.K + k) * r.A + s.a) * r.M + s.m];
  return curve;
}

}  // namespace

std::vector<double> precisionCurve(const EvalResult& result, std::size_t k, double iou) {
  return curveOf(result, result.precision, k, iou);
}

std::vector<double> scoreCurve(const EvalResult& result, std::size_t k, double iou) {
  return curveOf(result, result.scores, k, iou);
}

int recallIndexAtScore(std::span<const double> precision, std::span<const double> scores,
                       double score) {
  for (auto r = static_cast<int>(std::min(precision.size(), scores.size())) - 1; r >= 0; --r) {
    const auto i = static_cast<std::size_t>(r);
    if (precision[i] > 0 && scores[i] >= score) return r;
  }
  return -1;
}

std::optional<ScoreThreshold> bestF1Threshold(const EvalResult& result, std::size_t k, double iou) {
  const Slice s = sliceAt(result, iou);
  std::optional<ScoreThreshold> best;
  for (std::size_t r = 0; r < result.R; ++r) {
    const double p = result.precisionAt(s.t, r, k, s.a, s.m);
    const double rec = result.params.recall_thresholds[r];
    if (p <= 0 || rec <= 0) continue;  // -1: no ground truth; 0: recall not reached
    const double f1 = 2 * p * rec / (p + rec);
    if (!best || f1 > best->f1)
      best = ScoreThreshold{result.scoreAt(s.t, r, k, s.a, s.m), p, rec, f1};
  }
  return best;
}

}  // namespace mrcnn::eval
