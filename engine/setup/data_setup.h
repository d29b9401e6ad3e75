// The spec's data fields as the loader's options, the samples of a dataset named by the spec,
// and a loader batch as the model's tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

#include "dataset/loader/loader.h"
#include "engine/model/mask_rcnn.h"
#include "engine/setup/data_files.h"
#include "specs/spec.h"

namespace mrcnn::engine {

dataset::LoaderOptions loaderOptionsFromSpec(const spec::LoadedSpec& loaded, bool training);

// The training or validation samples: a COCO json and its image folder (or the shapes
// dataset's), else the converted shards matching training/validation_file_pattern. Throws
// with a message naming the file when it cannot be read.
std::shared_ptr<const dataset::SampleSource> sampleSource(const spec::LoadedSpec& loaded,
                                                          const DataFiles& data, bool training);

// The batch's images [B, 3, H, W] (a view of the batch's buffer: keep the batch alive) and
// padded/per-image sizes.
at::Tensor batchImages(const dataset::Batch& batch);
model::ImageSizes batchSizes(const dataset::Batch& batch);
// Per-image ground truth as tensors (copies); the masks as the loader crops them.
model::MaskRCNNTargets batchTargets(const dataset::Batch& batch, bool with_masks);
// One image's loader masks as the model takes them (a copy); height x width: the image's.
model::CroppedMasks croppedMasks(const dataset::Targets& targets, int64_t height, int64_t width);

}  // namespace mrcnn::engine
