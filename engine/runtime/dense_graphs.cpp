#include "engine/runtime/dense_graphs.h"

#include <exception>
#include <utility>
#include <vector>

namespace mrcnn::runtime {
namespace {

// The dense stages' modules: what the recordings read besides their input.
std::vector<torch::nn::Module*> denseModules(model::MaskRCNNImpl& net) {
  return {net.backbone().ptr().get(), net.rpn()->head().ptr().get()};
}

}  // namespace

DenseGraphs useDenseGraphs(model::MaskRCNNImpl& net, DenseGraphsRequest request,
                           GraphedCallable::Log log) {
  DenseGraphs out;
  net.setDenseRunner({});
  const std::string off = "CUDA graphs: off (";
  if (!request.wanted) {
    out.status = off + "use_cuda_graphs is false)";
    return out;
  }
  if (request.synchronised_batch_norm) {
    out.status = off +
                 "the batch norms all-reduce their statistics across ranks inside the backbone "
                 "(freeze_bn false in a data-parallel run); a recording cannot hold a collective)";
    return out;
  }
  std::unique_ptr<GraphRecorder> recorder = std::move(request.recorder);
  if (!recorder) {
    if (!request.device.is_cuda()) {
      out.status = off + "the device is " + request.device.str() +
                   "; CUDA graphs record CUDA kernels only)";
      return out;
    }
    try {
      recorder = makeCudaGraphRecorder(request.device);
    } catch (const std::exception& e) {
      out.status = off + e.what() + ")";
      return out;
    }
  }
  std::vector<at::Tensor> trainable, watched;
  for (torch::nn::Module* m : denseModules(net)) {
    for (const at::Tensor& p : m->parameters(/*recurse=*/true)) {
      watched.push_back(p);
      if (p.requires_grad()) trainable.push_back(p);
    }
    for (const at::Tensor& b : m->buffers(/*recurse=*/true))
      watched.push_back(b);
  }
  model::MaskRCNNImpl* model = &net;
  request.options.record_without_grad = request.inference;
  out.graphs = std::make_shared<GraphedCallable>(
      [model](const std::vector<at::Tensor>& inputs) { return model->denseStages(inputs[0]); },
      std::move(trainable), std::move(watched), std::move(recorder), std::move(log),
      request.options);
  std::shared_ptr<GraphedCallable> graphs = out.graphs;
  // Folded batch norms are weights kept beside the modules, out of the watched tensors: a
  // recording made with them folded runs only while they stay folded (prepareForInference()
  // drops the runner before it folds them again).
  const bool folded = net.backbone()->body()->folded();
  net.setDenseRunner([graphs, model, folded](const at::Tensor& images) {
    if (model->backbone()->body()->folded() != folded) return model->denseStages(images);
    return (*graphs)({images});
  });
  out.status = graphs->summary().substr(0, graphs->summary().find(':')) +
               ": on for the backbone, FPN and RPN head of " +
               (request.inference ? "inference" : "training steps") +
               " (recorded at the first batch of each shape)";
  return out;
}

}  // namespace mrcnn::runtime
