// TAO's channel-pruning rules on plain numbers (no LibTorch): which output filters of a
// convolution, or of a group of convolutions whose outputs meet in an addition, survive.
//
//  - A filter's score is the L2 norm of its weights (bias ignored), normalised by the layer's
//    largest norm (`max`) or by the L2 norm of all its filter norms (`L2`).
//  - A group (the residual blocks of a stage and their shortcut) combines its members' scores
//    filter by filter with the equalisation criterion: union the maximum, intersection the
//    minimum, arithmetic_mean and geometric_mean the means. The group then keeps the same
//    filters in every member.
//  - The filters scoring above the threshold are kept, at least min(min_num_filters, filters),
//    the count rounded up to a multiple of the granularity and capped at the layer's count;
//    the highest-scoring are kept, in their original order (ties: the earlier filter first).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::prune {

enum class Normalizer { kMax, kL2 };
enum class Equalization { kUnion, kIntersection, kArithmeticMean, kGeometricMean };

// The task's options, named as TAO's prune command names them (-pth, -pg, -nf, ...).
struct PruneOptions {
  double threshold = 0.1;  // pruning_threshold
  Normalizer normalizer = Normalizer::kMax;
  Equalization equalization = Equalization::kUnion;
  int64_t granularity = 8;   // pruning_granularity
  int64_t min_filters = 16;  // min_num_filters
  std::vector<std::string> excluded_layers;
};

// "max" | "L2" (also "l2"); nullopt for anything else.
std::optional<Normalizer> parseNormalizer(std::string_view name);
// "union" | "intersection" | "arithmetic_mean" | "geometric_mean"; nullopt otherwise.
std::optional<Equalization> parseEqualization(std::string_view name);
std::string_view normalizerName(Normalizer n);
std::string_view equalizationName(Equalization e);

// Each filter's norm divided by the largest (max) or by the L2 norm of the norms (L2); all
// zeros stay zeros.
std::vector<double> normaliseScores(const std::vector<double>& filter_norms, Normalizer normalizer);

// Member scores (each as many as the group's filters) combined filter by filter. Throws
// std::invalid_argument when the members differ in length or there are none.
std::vector<double> equaliseScores(const std::vector<std::vector<double>>& members,
                                   Equalization equalization);

// The indices of the filters kept (ascending) for these scores.
std::vector<int64_t> keptFilters(const std::vector<double>& scores, const PruneOptions& options);

}  // namespace mrcnn::prune
