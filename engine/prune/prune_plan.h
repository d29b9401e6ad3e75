// A pruning plan over a Mask R-CNN's weights, by torchvision's state_dict names, for every
// ResNet depth the spec allows (10, 18, 34, 50, 101), and its application to the weights.
//
// Prunable: every convolution of the ResNet body, the RPN head's 3x3 convolutions and the
// mask head's 3x3 convolutions. Never pruned: the FPN (lateral and output convolutions: the
// FPN outputs stay 256 wide), the RPN's objectness and box predictors, the box head and its
// predictor, the mask predictor (its transposed convolution and the mask logits).
// Groups (prune_rules.h): the outputs of a stage's blocks and of its first block's projection
// meet in the residual additions, so they form one group; where a stage's first block has no
// projection (a BasicBlock's layer1), the stem joins its group too. Every other convolution
// is a group of its own.
// Consumers cut to match: the next convolution's input channels, the batch norm after a
// convolution (weight, bias, running mean and variance), the FPN laterals' input channels,
// the RPN predictors' and the mask predictor's input channels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/state_dict.h"
#include "engine/prune/prune_rules.h"

namespace mrcnn::prune {

struct PrunedLayer {
  std::string name;   // the convolution's module, e.g. "backbone.body.layer1.0.conv1"
  std::string group;  // its group's first member (its own name when alone)
  int64_t filters = 0;
  std::vector<int64_t> kept;  // ascending
  bool excluded = false;      // listed, or in a group with a listed member: kept whole
};

// One tensor cut along one dimension to the kept indices.
struct Cut {
  std::string key;  // a state_dict key
  int64_t dim = 0;
  std::vector<int64_t> kept;
};

struct PrunePlan {
  std::vector<PrunedLayer> layers;  // in state_dict order
  std::vector<Cut> cuts;            // what applyPlan does, producers' and consumers' tensors
};

// Thrown for weights that are not a Mask R-CNN of ours or torchvision's (a missing or
// misshapen key, named) and for excluded layer names that match no prunable layer.
class PruneError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The plan for `state` (torchvision's current names; convolution weights [out, in, k, k]).
PrunePlan planPruning(const model::StateDict& state, const PruneOptions& options);

// The weights with the plan applied: each pruned convolution's filters (and bias) and its
// batch norm cut to the kept channels, and every consumer's input channels to match. Keys and
// order are unchanged; tensors not touched are shared with `state`.
model::StateDict applyPlan(const model::StateDict& state, const PrunePlan& plan);

// Parameters (every tensor of the state_dict but batch norm statistics and counters).
int64_t parameterCount(const model::StateDict& state);

}  // namespace mrcnn::prune
