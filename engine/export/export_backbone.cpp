// The exported backbone: ResNet with every batch norm folded into the convolution before it
// (as the engine's inference folds them: model/frozen_batch_norm.h), then the FPN. Channel
// counts and strides come from the modules themselves, so a pruned model exports as it is.
#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include <stdexcept>

#include "engine/export/export_stages.h"
#include "engine/model/frozen_batch_norm.h"

namespace mrcnn::exporter {

ModuleIndex::ModuleIndex(torch::nn::Module& model) {
  for (const auto& item : model.named_modules())
    modules_[item.key()] = item.value();
}

void ModuleIndex::missing(const std::string& name) {
  throw std::invalid_argument("ONNX export: the model has no module " + name);
}

void ModuleIndex::wrongKind(const std::string& name) {
  throw std::invalid_argument("ONNX export: the module " + name + " is not of the kind expected");
}

namespace {

// The convolution `conv` with the batch norm `norm` after it, as one convolution.
ConvWeights folded(const ModuleIndex& modules, const std::string& conv, const std::string& norm) {
  ConvWeights w = convWeights(modules.get<torch::nn::Conv2dImpl>(conv));
  torch::NoGradGuard no_grad;
  if (modules.has(norm)) {
    model::FoldedConv f;
    if (const auto* frozen = modules.find<model::FrozenBatchNorm2dImpl>(norm)) {
      f = model::foldIntoConv(w.weight, w.bias, *frozen);
    } else {
      // A trainable batch norm, in evaluation: its running statistics.
      auto& bn = modules.get<torch::nn::BatchNorm2dImpl>(norm);
      model::FrozenBatchNorm2dImpl as_frozen(bn.options.num_features(), bn.options.eps());
      as_frozen.weight = bn.weight;
      as_frozen.bias = bn.bias;
      as_frozen.running_mean = bn.running_mean;
      as_frozen.running_var = bn.running_var;
      f = model::foldIntoConv(w.weight, w.bias, as_frozen);
    }
    w.weight = f.weight;
    w.bias = f.bias;
  }
  return w;
}

Value relu(GraphBuilder& g, const Value& x) {
  return g.op("Relu", {x});
}

}  // namespace

std::vector<Value> emitBackbone(GraphBuilder& g, const ModuleIndex& modules,
                                const model::BackboneOptions& options, const Value& batch) {
  const std::string body = "backbone.body.";
  g.setScope("backbone/stem");
  Value x = relu(g, emitConv(g, "conv1", batch, folded(modules, body + "conv1", body + "bn1")));
  x = g.op("MaxPool", {x},
           {{"kernel_shape", std::vector<int64_t>{3, 3}},
            {"strides", std::vector<int64_t>{2, 2}},
            {"pads", std::vector<int64_t>{1, 1, 1, 1}}});

  std::vector<Value> stages;  // C2..C5
  for (int s = 1; s <= 4; ++s) {
    for (int b = 0;; ++b) {
      const std::string block = body + "layer" + std::to_string(s) + "." + std::to_string(b) + ".";
      if (!modules.has(block + "conv1")) break;
      g.setScope("backbone/layer" + std::to_string(s) + "." + std::to_string(b));
      const Value input = x;
      Value identity = input;
      if (modules.has(block + "downsample.0")) {
        identity = emitConv(g, "downsample", input,
                            folded(modules, block + "downsample.0", block + "downsample.1"));
      }
      // Every convolution of the block but the last is followed by a ReLU; the last one by the
      // residual addition, then the ReLU.
      for (int k = 1;; ++k) {
        const std::string conv = block + "conv" + std::to_string(k);
        const Value y = emitConv(g, "conv" + std::to_string(k), x,
                                 folded(modules, conv, block + "bn" + std::to_string(k)));
        if (modules.has(block + "conv" + std::to_string(k + 1))) {
          x = relu(g, y);
        } else {
          x = relu(g, g.op("Add", {y, identity}));
          break;
        }
      }
    }
    stages.push_back(x);
  }

  // The pyramid: levels min_level..5 from C<level>, top-down by nearest upsampling.
  g.setScope("backbone/fpn");
  const std::string fpn = "backbone.fpn.";
  const size_t n = static_cast<size_t>(6 - options.min_level);
  std::vector<Value> inputs(stages.begin() + (options.min_level - 2), stages.end());
  std::vector<Value> results(n);
  const auto conv = [&](const char* kind, size_t i, const Value& in) {
    const std::string name = std::string(kind) + "." + std::to_string(i) + ".0";
    return emitConv(g, name, in, convWeights(modules.get<torch::nn::Conv2dImpl>(fpn + name)));
  };
  Value last_inner = conv("inner_blocks", n - 1, inputs[n - 1]);
  results[n - 1] = conv("layer_blocks", n - 1, last_inner);
  for (size_t i = n - 1; i-- > 0;) {
    const Value lateral = conv("inner_blocks", i, inputs[i]);
    const Value top_down = g.op("Resize", {last_inner, "", "", g.op("Shape", {lateral})},
                                {{"mode", "nearest"},
                                 {"coordinate_transformation_mode", "asymmetric"},
                                 {"nearest_mode", "floor"}});
    last_inner = g.op("Add", {lateral, top_down});
    results[i] = conv("layer_blocks", i, last_inner);
  }
  if (options.max_level == 6) {
    results.push_back(g.op(
        "MaxPool", {results.back()},
        {{"kernel_shape", std::vector<int64_t>{1, 1}}, {"strides", std::vector<int64_t>{2, 2}}}));
  }
  return results;
}

}  // namespace mrcnn::exporter
