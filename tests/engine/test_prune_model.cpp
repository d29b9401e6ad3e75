// A pruned model as a model: built from its weights' shapes (engine/model/conv_widths.h,
// engine/setup/weights.h loadModel), computing what the original computes with the removed
// channels forced to zero (a small random model and the shapes spec's model), refusing widths
// that cannot add up, and the multiply-adds counted for its GFLOPs.
#include <ATen/ATen.h>
#include <torch/torch.h>  // before Qt: its "slots" macro breaks LibTorch's headers

#include <QtTest>
#include <map>
#include <set>
#include <string>

#include "engine/model/conv_widths.h"
#include "engine/model/mask_rcnn.h"
#include "engine/prune/flop_count.h"
#include "engine/prune/prune_plan.h"
#include "engine/setup/model_config.h"
#include "engine/setup/weights.h"
#include "specs/spec.h"
#include "tests/engine/tensor_compare.h"

namespace model = mrcnn::model;
namespace prune = mrcnn::prune;
using mrcnn::testing::relError;

namespace {

// Each convolution's filters scaled by factors in [0.05, 1], so that their norms differ as a
// trained model's do (a fresh initialisation's are all alike), and the batch norms' affine
// parameters and statistics made non-trivial, so that a channel left alive shows.
void spreadWeights(model::MaskRCNNImpl& m, uint64_t seed) {
  at::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters()) {
    at::Tensor w = p.value();
    if (w.dim() == 4) w.mul_(at::empty({w.size(0), 1, 1, 1}).uniform_(0.05, 1.0));
    if (w.dim() == 1) w.add_(at::empty_like(w).uniform_(-0.2, 0.2));
  }
  for (auto& b : m.named_buffers()) {
    if (b.key().ends_with("running_mean")) b.value().uniform_(-0.1, 0.1);
    if (b.key().ends_with("running_var")) b.value().uniform_(0.5, 1.5);
  }
}

model::MaskRCNNOptions smallOptions() {
  model::MaskRCNNOptions o = model::MaskRCNNOptions::torchvisionResNet50FPN(4);
  o.backbone.resnet.depth = 10;
  o.roi_heads.mask_head_layers = {64, 48};
  o.rpn_head_conv_depth = 2;
  return o;
}

model::MaskRCNNOptions shapesOptions() {
  mrcnn::spec::LoadedSpec loaded = mrcnn::spec::loadSpecFile(
      qEnvironmentVariable("MRCNN_SOURCE_DIR").toStdString() + "/specs/shapes_resnet18.txt");
  loaded.dropTrainingRequirements();
  if (!loaded.ok()) qFatal("specs/shapes_resnet18.txt does not validate");
  return mrcnn::engine::modelOptionsFromSpec(loaded.spec, loaded.resolved);
}

// The original's weights with every filter the plan removes made to output zero: its
// convolution's rows and bias, and its batch norm's scale and shift (a frozen or evaluated
// batch norm then gives exactly 0 whatever its statistics). `skip` leaves one layer alive.
model::StateDict zeroRemoved(const model::StateDict& state, const prune::PrunePlan& plan,
                             const std::string& skip = "") {
  std::map<std::string, size_t> index;
  model::StateDict out;
  for (const auto& [k, t] : state) {
    index[k] = out.size();
    out.emplace_back(k, t.clone());
  }
  for (const prune::PrunedLayer& l : plan.layers) {
    if (l.name == skip || static_cast<int64_t>(l.kept.size()) == l.filters) continue;
    const std::set<int64_t> kept(l.kept.begin(), l.kept.end());
    std::vector<int64_t> removed;
    for (int64_t f = 0; f < l.filters; ++f)
      if (!kept.count(f)) removed.push_back(f);
    const at::Tensor idx = at::tensor(removed, at::kLong);
    std::string norm = l.name;  // conv<k> -> bn<k>, downsample.0 -> downsample.1
    if (norm.ends_with("downsample.0")) {
      norm.back() = '1';
    } else if (const auto at = norm.rfind(".conv");
               at != std::string::npos && norm.rfind("backbone.body.", 0) == 0) {
      norm.replace(at, 5, ".bn");
    } else {
      norm.clear();  // the heads' convolutions have a bias and no norm
    }
    for (const std::string& key :
         {l.name + ".weight", l.name + ".bias", norm + ".weight", norm + ".bias"}) {
      if (const auto it = index.find(key); it != index.end())
        out[it->second].second.index_fill_(0, idx, 0.0);
    }
  }
  return out;
}

// What pruning touches, for one input: the FPN's levels, the RPN head's outputs, and the
// box and mask branches on fixed RoI features.
std::vector<at::Tensor> outputsOf(model::MaskRCNNImpl& m, const at::Tensor& image,
                                  const at::Tensor& box_features, const at::Tensor& mask_features) {
  torch::NoGradGuard no_grad;
  m.eval();
  std::vector<at::Tensor> out = m.backbone()->forward(image);
  auto [logits, deltas] = m.rpn()->head()->forward(out);
  out.insert(out.end(), logits.begin(), logits.end());
  out.insert(out.end(), deltas.begin(), deltas.end());
  auto [scores, boxes] =
      m.roiHeads()->boxPredictor()->forward(m.roiHeads()->boxHead()->forward(box_features));
  out.push_back(scores);
  out.push_back(boxes);
  out.push_back(
      m.roiHeads()->maskPredictor()->forward(m.roiHeads()->maskHead()->forward(mask_features)));
  return out;
}

double worstError(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, relError(a[i], b[i]));
  return worst;
}

}  // namespace

class TestPruneModel : public QObject {
  Q_OBJECT

 private slots:
  // The pruned network gives the original's outputs when the original's removed channels
  // are forced to zero: every consumer was cut where its producer was. Leaving one pruned
  // layer's channels alive breaks the equality, so the comparison can fail.
  void prunedModelComputesTheOriginalWithRemovedChannelsZeroed() {
    struct Case {
      const char* name;
      model::MaskRCNNOptions options;
      int64_t height, width;
      double threshold;
    };
    const std::vector<Case> cases = {{"random ResNet-10", smallOptions(), 96, 128, 0.5},
                                     {"shapes spec (ResNet-18)", shapesOptions(), 128, 192, 0.4}};
    for (const Case& c : cases) {
      at::manual_seed(5);
      model::MaskRCNN original(c.options);
      spreadWeights(*original, 17);
      const model::StateDict state = original->torchvisionState();
      prune::PruneOptions rules;
      rules.threshold = c.threshold;
      const prune::PrunePlan plan = prune::planPruning(state, rules);
      const model::StateDict pruned_state = prune::applyPlan(state, plan);
      // (The box head, never pruned, holds most of the parameters of models this small.)
      QVERIFY2(prune::parameterCount(pruned_state) < prune::parameterCount(state), c.name);
      int narrower = 0;
      for (const auto& l : plan.layers)
        narrower += static_cast<int64_t>(l.kept.size()) < l.filters;
      QVERIFY2(narrower > 5, c.name);

      model::MaskRCNN pruned = mrcnn::engine::loadModel(c.options, pruned_state, "pruned");
      QVERIFY2(!pruned->options().conv_widths.empty(), c.name);
      model::MaskRCNN zeroed(c.options);
      mrcnn::engine::loadWeights(*zeroed, zeroRemoved(state, plan), "zeroed");

      const at::Tensor image = at::randn({1, 3, c.height, c.width});
      const at::Tensor boxes = at::randn({20, 256, 7, 7});
      const at::Tensor masks = at::randn({6, 256, 14, 14});
      const auto want = outputsOf(*zeroed, image, boxes, masks);
      const auto got = outputsOf(*pruned, image, boxes, masks);
      const double error = worstError(got, want);
      QVERIFY2(error < 1e-4, qPrintable(QString("%1: relative error %2").arg(c.name).arg(error)));
      // Also folded for inference (the frozen batch norms in the convolutions).
      if (c.options.backbone.resnet.frozen_bn) {
        pruned->prepareForInference();
        zeroed->prepareForInference();
        QVERIFY2(worstError(outputsOf(*pruned, image, boxes, masks),
                            outputsOf(*zeroed, image, boxes, masks)) < 1e-4,
                 c.name);
      }

      // A layer whose removed channels stay alive: the outputs differ.
      std::string alive;
      for (const auto& l : plan.layers)
        if (l.name.find("layer3") != std::string::npos &&
            static_cast<int64_t>(l.kept.size()) < l.filters) {
          alive = l.name;
          break;
        }
      QVERIFY2(!alive.empty(), c.name);
      model::MaskRCNN leaky(c.options);
      mrcnn::engine::loadWeights(*leaky, zeroRemoved(state, plan, alive), "leaky");
      QVERIFY2(worstError(got, outputsOf(*leaky, image, boxes, masks)) > 1e-2,
               qPrintable(QString("%1: leaving %2 alive changed nothing")
                              .arg(c.name, QString::fromStdString(alive))));
    }
  }

  // The architecture is in the weights: loadModel rebuilds a pruned model from its tensors'
  // shapes (for every depth), the standard model has no pruned width, a plain model refuses
  // the pruned weights naming a shape, and widths that cannot add up are refused by name.
  void theArchitectureComesFromTheWeights() {
    for (int depth : {10, 18, 34, 50, 101}) {
      model::MaskRCNNOptions o = model::MaskRCNNOptions::torchvisionResNet50FPN(3);
      o.backbone.resnet.depth = depth;
      model::MaskRCNN standard(o);
      QVERIFY2(mrcnn::engine::prunedWidths(o, standard->torchvisionState()).empty(),
               qPrintable(QString::number(depth)));
      if (depth == 34 || depth == 101) continue;  // the rest is the same for every depth
      spreadWeights(*standard, 3);
      const model::StateDict state = standard->torchvisionState();
      prune::PruneOptions rules;
      rules.threshold = 0.6;
      const model::StateDict pruned_state =
          prune::applyPlan(state, prune::planPruning(state, rules));
      mrcnn::engine::WeightsReport report;
      model::MaskRCNN pruned = mrcnn::engine::loadModel(o, pruned_state, "pruned", "", &report);
      QVERIFY(report.pruned_widths > 10);
      QCOMPARE(report.pruned_widths, pruned->options().conv_widths.size());
      const model::StateDict rebuilt = pruned->torchvisionState();
      QCOMPARE(rebuilt.size(), pruned_state.size());
      for (size_t i = 0; i < rebuilt.size(); ++i) {
        QCOMPARE(rebuilt[i].first, pruned_state[i].first);
        QVERIFY2(at::equal(rebuilt[i].second, pruned_state[i].second), rebuilt[i].first.c_str());
      }
      model::MaskRCNN plain(o);
      try {
        mrcnn::engine::loadWeights(*plain, pruned_state, "pruned.pt");
        QFAIL("a standard model loaded pruned weights");
      } catch (const model::StateDictError& e) {
        QVERIFY2(QString(e.what()).contains("pruned.pt") && QString(e.what()).contains("shape"),
                 e.what());
      }
    }
    // An identity block's output must keep its input's channels.
    model::MaskRCNNOptions o = model::MaskRCNNOptions::torchvisionResNet50FPN(3);
    o.backbone.resnet.depth = 18;
    o.conv_widths = {{"backbone.body.layer1.0.conv2", 32}};
    try {
      model::MaskRCNN bad(o);
      QFAIL("a residual sum of 32 and 64 channels was built");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("layer1.0.conv2 has 32 output channels"), e.what());
    }
    o.conv_widths = {{"backbone.fpn.inner_blocks.0.0", 32}};
    QVERIFY_THROWS_EXCEPTION(std::exception, model::MaskRCNN{o});
  }

  void prunableNamesAndStandardWidths() {
    for (const char* yes :
         {"backbone.body.conv1", "backbone.body.layer1.0.conv1", "backbone.body.layer4.2.conv3",
          "backbone.body.layer2.0.downsample.0", "rpn.head.conv.0.0", "roi_heads.mask_head.3.0"})
      QVERIFY2(model::isPrunableConv(yes), yes);
    for (const char* no :
         {"backbone.body.bn1", "backbone.body.layer1.0.bn1", "backbone.body.layer2.0.downsample.1",
          "backbone.fpn.inner_blocks.0.0", "rpn.head.cls_logits", "rpn.head.conv.0.0.x",
          "roi_heads.mask_predictor.conv5_mask", "roi_heads.box_head.fc6",
          "backbone.body.layer.0.conv1"})
      QVERIFY2(!model::isPrunableConv(no), no);
    QCOMPARE(model::standardConvWidth("backbone.body.layer3.1.conv3", 50, 256, {}), int64_t{1024});
    QCOMPARE(model::standardConvWidth("backbone.body.layer3.1.conv2", 18, 256, {}), int64_t{256});
    QCOMPARE(model::standardConvWidth("roi_heads.mask_head.1.0", 18, 256, {128, 96}), int64_t{96});
    QCOMPARE(model::convWidthsJson({{"a", 3}, {"b", 4}}), std::string("{\"a\":3,\"b\":4}"));
  }

  // The multiply-adds of a convolution, a transposed convolution and a linear layer, as
  // worked out by hand; a pruned model costs less than its original.
  void flopsAreCountedFromWhatRuns() {
    torch::NoGradGuard no_grad;
    {
      prune::FlopCount count;
      at::conv2d(at::randn({2, 3, 16, 20}), at::randn({8, 3, 3, 3}), {}, {2, 2}, {1, 1});
      QCOMPARE(count.multiplyAdds(), int64_t{2 * 8 * 8 * 10 * 3 * 3 * 3});
    }
    {
      prune::FlopCount count;
      at::conv_transpose2d(at::randn({5, 4, 14, 14}), at::randn({4, 6, 2, 2}), {}, {2, 2});
      at::linear(at::randn({7, 20}), at::randn({30, 20}), at::randn({30}));
      QCOMPARE(count.multiplyAdds(), int64_t{5 * 4 * 14 * 14 * 6 * 2 * 2 + 7 * 20 * 30});
    }
    model::MaskRCNN m(smallOptions());
    spreadWeights(*m, 9);
    const double before = prune::inferenceGflops(*m, 96, 128, 100, 10);
    QCOMPARE(prune::inferenceGflops(*m, 96, 128, 100, 10), before);  // deterministic
    prune::PruneOptions rules;
    rules.threshold = 0.5;
    const model::StateDict state = m->torchvisionState();
    model::MaskRCNN pruned = mrcnn::engine::loadModel(
        smallOptions(), prune::applyPlan(state, prune::planPruning(state, rules)), "pruned");
    const double after = prune::inferenceGflops(*pruned, 96, 128, 100, 10);
    QVERIFY2(after < before && after > 0.05 * before,
             qPrintable(QString("%1 -> %2 GFLOPs").arg(before).arg(after)));
  }
};

QTEST_GUILESS_MAIN(TestPruneModel)
#include "test_prune_model.moc"
