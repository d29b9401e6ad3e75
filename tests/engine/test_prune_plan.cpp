// The pruning plan over whole Mask R-CNNs (engine/prune/prune_plan.h): which convolutions
// group (a stage's outputs and its projection; the stem with layer1 where layer1 has no
// projection), the rules per group, exclusions, and the pruned weights' shapes: every
// consumer's input channels equal its producer's kept filters, for ResNet-10/18/50 bodies.
#include <ATen/ATen.h>
#include <torch/nn/module.h>  // before Qt: its "slots" macro breaks LibTorch's headers

#include <QtTest>
#include <map>
#include <set>
#include <string>

#include "engine/model/mask_rcnn.h"
#include "engine/model/state_dict.h"
#include "engine/prune/prune_plan.h"

namespace model = mrcnn::model;
namespace prune = mrcnn::prune;

namespace {

model::StateDict randomModel(int depth, uint64_t seed) {
  at::manual_seed(seed);
  model::MaskRCNNOptions o = model::MaskRCNNOptions::torchvisionResNet50FPN(5);
  o.backbone.resnet.depth = depth;
  o.backbone.resnet.frozen_bn = false;
  o.roi_heads.mask_head_layers = {64, 32};
  model::MaskRCNN m(o);
  // Filters of varied norms (a fresh initialisation's are all alike): each convolution's
  // filters scaled by factors in [0.05, 1].
  for (auto& p : m->named_parameters()) {
    at::Tensor w = p.value().data();
    if (w.dim() == 4) w.mul_(at::empty({w.size(0), 1, 1, 1}).uniform_(0.05, 1.0));
  }
  return model::stateDictOf(*m);
}

std::map<std::string, at::Tensor> byKey(const model::StateDict& s) {
  return {s.begin(), s.end()};
}

}  // namespace

class TestPrunePlan : public QObject {
  Q_OBJECT

 private slots:
  void stagesGroupWithTheirProjectionAndTheStemJoinsAnIdentityLayer1() {
    for (int depth : {10, 18, 50}) {
      const model::StateDict state = randomModel(depth, 7);
      prune::PruneOptions o;
      o.threshold = 0.5;
      const prune::PrunePlan plan = prune::planPruning(state, o);
      std::map<std::string, std::string> group;
      std::map<std::string, std::vector<int64_t>> kept;
      for (const auto& l : plan.layers) {
        group[l.name] = l.group;
        kept[l.name] = l.kept;
      }
      const bool basic = depth < 50;
      const std::string last = basic ? "conv2" : "conv3";
      // layer1: BasicBlocks keep the stem's width (identity), Bottlenecks project.
      QCOMPARE(group["backbone.body.layer1.0." + last] == group["backbone.body.conv1"], basic);
      for (int s = 2; s <= 4; ++s) {
        const std::string stage = "backbone.body.layer" + std::to_string(s);
        QCOMPARE(group[stage + ".0.downsample.0"], group[stage + ".0." + last]);
        QCOMPARE(kept[stage + ".0.downsample.0"], kept[stage + ".0." + last]);
        if (depth != 10) QCOMPARE(group[stage + ".1." + last], group[stage + ".0." + last]);
        QVERIFY(group[stage + ".0.conv1"] == stage + ".0.conv1");  // alone
        QVERIFY(group[stage + ".0." + last] !=
                group["backbone.body.layer" + std::to_string(s - 1) + ".0." + last]);
      }
      // Never pruned: FPN, predictors, box head.
      for (const auto& l : plan.layers) {
        QVERIFY2(l.name.rfind("backbone.body.", 0) == 0 || l.name.rfind("rpn.head.conv.", 0) == 0 ||
                     l.name.rfind("roi_heads.mask_head.", 0) == 0,
                 l.name.c_str());
        // The rules: at least min(16, filters), a multiple of 8 unless all are kept.
        const auto n = static_cast<int64_t>(l.kept.size());
        QVERIFY(n >= std::min<int64_t>(16, l.filters) && n <= l.filters);
        QVERIFY2(n == l.filters || n % 8 == 0, l.name.c_str());
      }
    }
  }

  void prunedWeightsFitTogether() {
    for (int depth : {18, 50}) {
      const model::StateDict state = randomModel(depth, 11);
      prune::PruneOptions o;
      o.threshold = 0.6;
      const prune::PrunePlan plan = prune::planPruning(state, o);
      const model::StateDict pruned = prune::applyPlan(state, plan);
      QCOMPARE(pruned.size(), state.size());
      QVERIFY(prune::parameterCount(pruned) < prune::parameterCount(state));
      auto w = byKey(pruned);
      const auto out = [&](const std::string& conv) { return w.at(conv + ".weight").size(0); };
      const auto in = [&](const std::string& conv) { return w.at(conv + ".weight").size(1); };
      QCOMPARE(in("backbone.body.layer1.0.conv1"), out("backbone.body.conv1"));
      QCOMPARE(w.at("backbone.body.bn1.running_var").size(0), out("backbone.body.conv1"));
      const std::string last = depth < 50 ? "conv2" : "conv3";
      const int convs = depth < 50 ? 2 : 3;
      int fpn = 0;
      std::string previous_stage;
      for (int s = 1; s <= 4; ++s) {
        const std::string stage = "backbone.body.layer" + std::to_string(s);
        for (int b = 0; w.count(stage + "." + std::to_string(b) + ".conv1.weight"); ++b) {
          const std::string block = stage + "." + std::to_string(b);
          for (int k = 1; k <= convs; ++k) {
            const std::string conv = block + ".conv" + std::to_string(k);
            QCOMPARE(w.at(block + ".bn" + std::to_string(k) + ".weight").size(0), out(conv));
            if (k > 1) QCOMPARE(in(conv), out(block + ".conv" + std::to_string(k - 1)));
          }
          if (b > 0) QCOMPARE(in(block + ".conv1"), out(stage + ".0." + last));
          if (b == 0 && s > 1) {
            QCOMPARE(in(block + ".conv1"), out(previous_stage + ".0." + last));
            QCOMPARE(in(block + ".downsample.0"), out(previous_stage + ".0." + last));
          }
        }
        QCOMPARE(in("backbone.fpn.inner_blocks." + std::to_string(fpn++) + ".0"),
                 out(stage + ".0." + last));
        previous_stage = stage;
      }
      QCOMPARE(w.at("backbone.fpn.layer_blocks.0.0.weight").size(0), int64_t{256});
      QCOMPARE(in("rpn.head.cls_logits"), out("rpn.head.conv.0.0"));
      QCOMPARE(in("roi_heads.mask_head.1.0"), out("roi_heads.mask_head.0.0"));
      QCOMPARE(w.at("roi_heads.mask_predictor.conv5_mask.weight").size(0),
               out("roi_heads.mask_head.1.0"));
      QCOMPARE(w.at("roi_heads.mask_head.1.0.bias").size(0), out("roi_heads.mask_head.1.0"));
      // What is kept is the original's filters, in order (inputs the stem's 3 channels and
      // the FPN's 256, never cut).
      const auto original = byKey(state);
      for (const auto& l : plan.layers) {
        if (l.name != "backbone.body.conv1" && l.name != "roi_heads.mask_head.0.0") continue;
        QVERIFY(static_cast<int64_t>(l.kept.size()) < l.filters);
        QVERIFY(at::equal(
            w.at(l.name + ".weight"),
            original.at(l.name + ".weight").index_select(0, at::tensor(l.kept, at::kLong))));
      }
    }
  }

  void anExcludedLayerKeepsItsGroupWhole() {
    const model::StateDict state = randomModel(18, 3);
    prune::PruneOptions o;
    o.threshold = 0.5;
    o.excluded_layers = {"backbone.body.layer2.1.conv2"};
    const prune::PrunePlan plan = prune::planPruning(state, o);
    // layer2's outputs (both blocks' conv2 and the projection) stay whole; nothing else is
    // excluded, and the rest is pruned.
    const std::set<std::string> whole{"backbone.body.layer2.0.conv2",
                                      "backbone.body.layer2.1.conv2",
                                      "backbone.body.layer2.0.downsample.0"};
    int pruned = 0;
    for (const auto& l : plan.layers) {
      QCOMPARE(l.excluded, whole.count(l.name) > 0);
      if (l.excluded) QCOMPARE(static_cast<int64_t>(l.kept.size()), l.filters);
      pruned += static_cast<int64_t>(l.kept.size()) < l.filters;
    }
    QVERIFY(pruned > 10);
    o.excluded_layers = {"backbone.fpn.inner_blocks.0.0"};
    QVERIFY_THROWS_EXCEPTION(prune::PruneError, prune::planPruning(state, o));
    QVERIFY_THROWS_EXCEPTION(prune::PruneError, prune::planPruning(model::StateDict{}, {}));
  }
};

QTEST_GUILESS_MAIN(TestPrunePlan)
#include "test_prune_plan.moc"
