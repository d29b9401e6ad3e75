// The inference backend a task asks for (--backend libtorch|openvino, --onnx), made from the
// spec and its weights, and the COCO evaluation of what a backend ran: shared by the
// inference, evaluate and export tasks.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "eval/evaluator.h"
#include "engine/inference/backend.h"
#include "engine/inference/tile_options.h"
#include "engine/model/mask_rcnn.h"
#include "engine/setup/categories.h"
#include "engine/events/task_report.h"

namespace mrcnn::engine {

struct BackendRequest {
  std::string backend = "libtorch";  // or "openvino"
  // OpenVINO: this exported model; empty: the weights exported on the fly into
  // <dir>/openvino/<weights stem>.onnx, dir the run directory where the task writes into it
  // (an inference with --out elsewhere: that folder).
  std::filesystem::path onnx;
  // tile.size > 0: the backend runs on tiles (engine/inference/tiled_backend.h).
  TileOptions tile;
  // Throughput mode with this many streams (OpenVINO's, or LibTorch's threads on the CPU:
  // engine/inference/openvino_backend.h, libtorch_backend.h); 1: latency mode.
  int streams = 1;
};

// LibTorch: `net` (with its weights) on `device` in the spec's precision. OpenVINO: on the
// CPU, bf16 when the spec's precision is bf16 and the CPU has it. Reports a failure and
// returns its exit code; kExitOk with `backend` set otherwise.
int makeBackend(const BackendRequest& request, const spec::LoadedSpec& loaded,
                const std::filesystem::path& spec_path, const std::string& device,
                const std::filesystem::path& run_dir, model::MaskRCNN net,
                const std::vector<Category>& categories, const std::filesystem::path& weights,
                TaskReport& report, std::unique_ptr<InferenceBackend>& backend);

// COCO bbox (and segm with masks) of a backend's detections of files under `root`, named by
// their path relative to it in `image_ids`; files without an id take no part. Empty report
// when none has one.
eval::EvaluationReport evaluateBackendRun(const BackendRun& run, const std::filesystem::path& root,
                                          const std::map<std::string, int64_t>& image_ids,
                                          const std::vector<int64_t>& category_ids,
                                          const dataset::CocoDataset& ground_truth,
                                          bool with_masks);

}  // namespace mrcnn::engine
