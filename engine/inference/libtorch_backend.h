// The LibTorch backend: the engine's model, batch norms folded, on its device, in the spec's
// precision (autocast), images batched by padded size (each image's detections are those it
// gets alone). Throughput mode on the CPU (streams > 1): that many threads each take the next
// file and run it alone on its share of the cores, the results in the files' order.
#pragma once

#include <c10/core/Device.h>

#include <memory>

#include "engine/inference/backend.h"
#include "engine/model/mask_rcnn.h"
#include "engine/runtime/precision.h"

namespace mrcnn::engine {

// `model` has its weights; it is moved to `device` and prepared for inference (its frozen
// batch norms folded). streams > 1 only on the CPU. cuda_graphs: the backbone, FPN and RPN head
// recorded as CUDA graphs per batch shape and replayed (runtime/dense_graphs.h); whether they
// are on, or why not, is in description().
std::unique_ptr<InferenceBackend> makeLibTorchBackend(model::MaskRCNN model, InputOptions input,
                                                      c10::Device device, Precision precision,
                                                      int streams = 1, bool cuda_graphs = false);

// The same over a model that goes on training (the validator's, engine/validation/
// validator.h): used as it is, on its device, nothing folded; the caller puts it in
// evaluation mode.
std::unique_ptr<InferenceBackend> makeLibTorchBackendOverTraining(model::MaskRCNN model,
                                                                  InputOptions input,
                                                                  c10::Device device,
                                                                  Precision precision);

}  // namespace mrcnn::engine
