// The training batches on the model's device, one batch ahead on a GPU: a thread of its own
// takes the loader's next batch, copies its images into pinned memory and on to the device on
// a side stream, with its targets, while the current step runs; the step's stream then waits
// for that copy on the device (the host does not). On the CPU the batch is taken and wrapped
// when asked for, as before (`ahead` runs the thread there too, for the tests).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <optional>

#include "dataset/loader/loader.h"
#include "engine/model/mask_rcnn.h"

namespace mrcnn::train {

struct DeviceBatch {
  dataset::Batch host;            // as the loader gave it (meta, warnings, positions)
  at::Tensor images;              // [N, 3, H, W] float on the device
  model::MaskRCNNTargets targets; // boxes, labels and masks on the device; no sample keys
};

class DeviceBatches {
 public:
  // ahead: prepare the next batch on a thread while the caller works (default: on CUDA).
  DeviceBatches(dataset::Loader& loader, const c10::Device& device, bool with_masks,
                std::optional<bool> ahead = std::nullopt);
  ~DeviceBatches();  // waits for a batch being prepared, then stops
  DeviceBatches(const DeviceBatches&) = delete;
  DeviceBatches& operator=(const DeviceBatches&) = delete;

  // The next batch, ready for the current stream; std::nullopt when the loader has none.
  // The loader's errors are rethrown here, in order, as its own next() throws them.
  std::optional<DeviceBatch> next();

  bool ahead() const;

  struct State;  // the thread, its slot and (on CUDA) the side stream (device_batches.cpp)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace mrcnn::train
