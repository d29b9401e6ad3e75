#include "engine/prune/prune_plan.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace mrcnn::prune {
namespace {

// A prunable convolution: its weight's module, the batch norm after it (empty: none) and
// whether it has a bias of its own.
struct Conv {
  std::string name;
  std::string norm;
};

// A consumer's weight and the dimension of its input channels.
struct Input {
  std::string key;
  int64_t dim = 1;
};

class Graph {
 public:
  explicit Graph(const model::StateDict& state) {
    for (size_t i = 0; i < state.size(); ++i)
      index_[state[i].first] = i;
  }

  bool has(const std::string& key) const { return index_.count(key) > 0; }
  size_t position(const std::string& key) const { return index_.at(key); }

  // Adds a convolution; returns its node.
  int add(Conv conv) {
    convs_.push_back(std::move(conv));
    parent_.push_back(static_cast<int>(parent_.size()));
    inputs_.emplace_back();
    return static_cast<int>(convs_.size()) - 1;
  }
  void join(int a, int b) { parent_[static_cast<size_t>(root(a))] = root(b); }
  int root(int a) {
    while (parent_[static_cast<size_t>(a)] != a)
      a = parent_[static_cast<size_t>(a)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(a)])];
    return a;
  }
  // `key` reads the output channels of `producer` (its group's).
  void consume(int producer, Input input) {
    if (has(input.key)) inputs_[static_cast<size_t>(producer)].push_back(std::move(input));
  }

  const std::vector<Conv>& convs() const { return convs_; }
  const std::vector<Input>& inputs(int node) const { return inputs_[static_cast<size_t>(node)]; }

 private:
  std::map<std::string, size_t> index_;
  std::vector<Conv> convs_;
  std::vector<int> parent_;
  std::vector<std::vector<Input>> inputs_;
};

std::string blockName(int stage, int block) {
  return "backbone.body.layer" + std::to_string(stage) + "." + std::to_string(block);
}

// The ResNet body: stem, stages, their groups and consumers (the FPN laterals included).
void addResNet(Graph& g) {
  if (!g.has("backbone.body.conv1.weight") || !g.has(blockName(1, 0) + ".conv1.weight"))
    throw PruneError(
        "not a Mask R-CNN with a ResNet backbone: no backbone.body.conv1.weight or "
        "backbone.body.layer1.0.conv1.weight");
  const bool bottleneck = g.has(blockName(1, 0) + ".conv3.weight");
  const int convs_per_block = bottleneck ? 3 : 2;
  const int stem = g.add({"backbone.body.conv1", "backbone.body.bn1"});
  int input = stem;  // the node whose group produces the next block's input
  int inner_blocks = 0;
  while (g.has("backbone.fpn.inner_blocks." + std::to_string(inner_blocks) + ".0.weight"))
    ++inner_blocks;
  for (int s = 1; s <= 4; ++s) {
    int stage_output = -1;
    for (int b = 0; g.has(blockName(s, b) + ".conv1.weight"); ++b) {
      const std::string block = blockName(s, b);
      std::vector<int> nodes;
      for (int k = 1; k <= convs_per_block; ++k)
        nodes.push_back(
            g.add({block + ".conv" + std::to_string(k), block + ".bn" + std::to_string(k)}));
      g.consume(input, {block + ".conv1.weight", 1});
      for (size_t k = 0; k + 1 < nodes.size(); ++k)
        g.consume(nodes[k], {block + ".conv" + std::to_string(k + 2) + ".weight", 1});
      if (g.has(block + ".downsample.0.weight")) {
        const int ds = g.add({block + ".downsample.0", block + ".downsample.1"});
        g.consume(input, {block + ".downsample.0.weight", 1});
        g.join(ds, nodes.back());
      } else {
        g.join(nodes.back(), input);  // the identity: the block's input is its output's group
      }
      if (stage_output >= 0) g.join(nodes.back(), stage_output);
      stage_output = nodes.back();
      input = stage_output;
    }
    if (stage_output < 0)
      throw PruneError("not a ResNet backbone: no " + blockName(s, 0) + ".conv1.weight");
    // The FPN laterals read the last inner_blocks stages.
    const int lateral = s - (4 - inner_blocks) - 1;
    if (lateral >= 0)
      g.consume(stage_output,
                {"backbone.fpn.inner_blocks." + std::to_string(lateral) + ".0.weight", 1});
  }
}

// A chain of convolutions `prefix<i>.0` (i = 0, 1, ...) whose last feeds `last_inputs`.
void addChain(Graph& g, const std::string& prefix, const std::vector<Input>& last_inputs) {
  int previous = -1;
  for (int i = 0; g.has(prefix + std::to_string(i) + ".0.weight"); ++i) {
    const std::string name = prefix + std::to_string(i) + ".0";
    const int node = g.add({name, ""});
    if (previous >= 0) g.consume(previous, {name + ".weight", 1});
    previous = node;
  }
  if (previous >= 0)
    for (const Input& in : last_inputs)
      g.consume(previous, in);
}

std::vector<double> filterNorms(const at::Tensor& weight) {
  const at::Tensor norms = weight.detach().to(at::kDouble).flatten(1).norm(2, {1}).contiguous();
  return {norms.data_ptr<double>(), norms.data_ptr<double>() + norms.numel()};
}

}  // namespace

PrunePlan planPruning(const model::StateDict& state, const PruneOptions& options) {
  Graph g(state);
  addResNet(g);
  addChain(g, "rpn.head.conv.",
           {{"rpn.head.cls_logits.weight", 1}, {"rpn.head.bbox_pred.weight", 1}});
  addChain(g, "roi_heads.mask_head.", {{"roi_heads.mask_predictor.conv5_mask.weight", 0}});

  const auto tensor = [&](const std::string& key) -> const at::Tensor& {
    return state[g.position(key)].second;
  };
  const std::set<std::string> excluded(options.excluded_layers.begin(),
                                       options.excluded_layers.end());
  std::set<std::string> known;
  std::map<int, std::vector<int>> groups;  // root -> members
  for (int n = 0; n < static_cast<int>(g.convs().size()); ++n) {
    const at::Tensor& w = tensor(g.convs()[static_cast<size_t>(n)].name + ".weight");
    if (w.dim() != 4)
      throw PruneError(g.convs()[static_cast<size_t>(n)].name +
                       ".weight: a convolution's weight is [out, in, k, k], got " +
                       std::to_string(w.dim()) + " dimensions");
    groups[g.root(n)].push_back(n);
    known.insert(g.convs()[static_cast<size_t>(n)].name);
  }
  for (const std::string& name : excluded)
    if (!known.count(name))
      throw PruneError("excluded layer \"" + name +
                       "\" is not a prunable convolution (names as the plan's table prints them, "
                       "e.g. backbone.body.layer1.0.conv1)");

  PrunePlan plan;
  for (const auto& [root, members] : groups) {
    std::vector<std::vector<double>> scores;
    bool keep_all = false;
    int64_t filters = -1;
    for (int n : members) {
      const Conv& c = g.convs()[static_cast<size_t>(n)];
      const at::Tensor& w = tensor(c.name + ".weight");
      if (filters >= 0 && w.size(0) != filters)
        throw PruneError(c.name + ".weight: " + std::to_string(w.size(0)) +
                         " filters where the other members of its group have " +
                         std::to_string(filters));
      filters = w.size(0);
      scores.push_back(normaliseScores(filterNorms(w), options.normalizer));
      keep_all = keep_all || excluded.count(c.name) > 0;
    }
    std::vector<int64_t> kept(static_cast<size_t>(filters));
    std::iota(kept.begin(), kept.end(), 0);
    if (!keep_all) kept = keptFilters(equaliseScores(scores, options.equalization), options);
    const std::string& group = g.convs()[static_cast<size_t>(members.front())].name;
    for (int n : members) {
      const Conv& c = g.convs()[static_cast<size_t>(n)];
      plan.layers.push_back({c.name, group, filters, kept, keep_all});
      if (static_cast<int64_t>(kept.size()) == filters) continue;
      for (const char* part : {".weight", ".bias"})
        if (g.has(c.name + part)) plan.cuts.push_back({c.name + part, 0, kept});
      if (!c.norm.empty())
        for (const char* part : {".weight", ".bias", ".running_mean", ".running_var"})
          if (g.has(c.norm + part)) plan.cuts.push_back({c.norm + part, 0, kept});
      for (const Input& in : g.inputs(n))
        plan.cuts.push_back({in.key, in.dim, kept});
    }
  }
  std::sort(plan.layers.begin(), plan.layers.end(),
            [&](const PrunedLayer& a, const PrunedLayer& b) {
              return g.position(a.name + ".weight") < g.position(b.name + ".weight");
            });
  return plan;
}

model::StateDict applyPlan(const model::StateDict& state, const PrunePlan& plan) {
  model::StateDict out = state;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < out.size(); ++i)
    index[out[i].first] = i;
  for (const Cut& cut : plan.cuts) {
    const auto it = index.find(cut.key);
    if (it == index.end())
      throw PruneError("the plan cuts " + cut.key + ", which the weights lack");
    at::Tensor& t = out[it->second].second;
    t = t.index_select(cut.dim, at::tensor(cut.kept, at::kLong).to(t.device())).contiguous();
  }
  return out;
}

int64_t parameterCount(const model::StateDict& state) {
  int64_t n = 0;
  for (const auto& [key, t] : state) {
    const auto ends = [&](const std::string& suffix) {
      return key.size() >= suffix.size() &&
             key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends(".running_mean") || ends(".running_var") || ends(".num_batches_tracked")) continue;
    n += t.numel();
  }
  return n;
}

}  // namespace mrcnn::prune
