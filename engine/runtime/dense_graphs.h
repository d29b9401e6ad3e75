// CUDA graphs for the dense stages of the model (the spec's use_cuda_graphs): the backbone,
// its FPN and the RPN head, whose shapes the padded batch fixes, recorded once per batch shape
// and replayed (graphed_callable.h); the rest (proposals, samplers, RoI heads, losses,
// post-processing) runs as before. For training: forward and backward of losses(). For
// inference: the forward of detect() (the caller makes them after prepareForInference(), which,
// like loading weights, drops them). Off, with the reason, where they cannot run.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "engine/model/mask_rcnn.h"
#include "engine/runtime/graphed_callable.h"

namespace mrcnn::runtime {

struct DenseGraphsRequest {
  bool wanted = false;  // use_cuda_graphs
  c10::Device device{c10::kCPU};
  // What is recorded: training steps (forward and backward; evaluation in between runs
  // eagerly) or inference (the forward without gradients).
  bool inference = false;
  // The batch norms all-reduce their statistics across ranks inside the backbone (freeze_bn
  // false in a data-parallel run): a collective a recording cannot hold.
  bool synchronised_batch_norm = false;
  // Records with this recorder instead of CUDA graphs, whatever the device (the tests'
  // EagerRecorder).
  std::unique_ptr<GraphRecorder> recorder;
  GraphedCallableOptions options{};
};

struct DenseGraphs {
  std::string status;  // one line for the log: on, or off and why
  std::shared_ptr<GraphedCallable> graphs;  // null when off
};

// Sets net's dense runner to the recordings when they can run, and says so. `log` receives
// each recording and each fallback to eager runs as they happen.
DenseGraphs useDenseGraphs(model::MaskRCNNImpl& net, DenseGraphsRequest request,
                           GraphedCallable::Log log);

}  // namespace mrcnn::runtime
