#include "engine/prune/prune_rules.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace mrcnn::prune {

std::optional<Normalizer> parseNormalizer(std::string_view name) {
  if (name == "max") return Normalizer::kMax;
  if (name == "L2" || name == "l2") return Normalizer::kL2;
  return std::nullopt;
}

std::optional<Equalization> parseEqualization(std::string_view name) {
  if (name == "union") return Equalization::kUnion;
  if (name == "intersection") return Equalization::kIntersection;
  if (name == "arithmetic_mean") return Equalization::kArithmeticMean;
  if (name == "geometric_mean") return Equalization::kGeometricMean;
  return std::nullopt;
}

std::string_view normalizerName(Normalizer n) {
  return n == Normalizer::kMax ? "max" : "L2";
}

std::string_view equalizationName(Equalization e) {
  switch (e) {
    case Equalization::kUnion:
      return "union";
    case Equalization::kIntersection:
      return "intersection";
    case Equalization::kArithmeticMean:
      return "arithmetic_mean";
    case Equalization::kGeometricMean:
      return "geometric_mean";
  }
  return "?";
}

std::vector<double> normaliseScores(const std::vector<double>& norms, Normalizer normalizer) {
  double divisor = 0;
  if (normalizer == Normalizer::kMax) {
    for (double n : norms)
      divisor = std::max(divisor, n);
  } else {
    for (double n : norms)
      divisor += n * n;
    divisor = std::sqrt(divisor);
  }
  std::vector<double> out(norms.size(), 0.0);
  if (divisor > 0)
    for (size_t i = 0; i < norms.size(); ++i)
      out[i] = norms[i] / divisor;
  return out;
}

std::vector<double> equaliseScores(const std::vector<std::vector<double>>& members,
                                   Equalization equalization) {
  if (members.empty()) throw std::invalid_argument("equaliseScores: a group without members");
  const size_t n = members.front().size();
  for (const auto& m : members)
    if (m.size() != n)
      throw std::invalid_argument("equaliseScores: members of " + std::to_string(n) + " and " +
                                  std::to_string(m.size()) + " filters in one group");
  std::vector<double> out(n);
  const auto count = static_cast<double>(members.size());
  for (size_t i = 0; i < n; ++i) {
    double v = members.front()[i];
    switch (equalization) {
      case Equalization::kUnion:
        for (const auto& m : members)
          v = std::max(v, m[i]);
        break;
      case Equalization::kIntersection:
        for (const auto& m : members)
          v = std::min(v, m[i]);
        break;
      case Equalization::kArithmeticMean:
        v = 0;
        for (const auto& m : members)
          v += m[i];
        v /= count;
        break;
      case Equalization::kGeometricMean: {
        // exp(mean(log)): 0 when any member's score is 0.
        double logs = 0;
        bool zero = false;
        for (const auto& m : members) {
          if (m[i] <= 0)
            zero = true;
          else
            logs += std::log(m[i]);
        }
        v = zero ? 0.0 : std::exp(logs / count);
        break;
      }
    }
    out[i] = v;
  }
  return out;
}

std::vector<int64_t> keptFilters(const std::vector<double>& scores, const PruneOptions& options) {
  const auto filters = static_cast<int64_t>(scores.size());
  int64_t keep = 0;
  for (double s : scores)
    if (s > options.threshold) ++keep;
  keep = std::max(keep, std::min(options.min_filters, filters));
  const int64_t g = std::max<int64_t>(1, options.granularity);
  keep = std::min((keep + g - 1) / g * g, filters);
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  // Highest score first; the earlier filter first among equals.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  order.resize(static_cast<size_t>(keep));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace mrcnn::prune
