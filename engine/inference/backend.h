// What runs the model on image files for the inference and evaluate tasks: LibTorch (the
// engine's own model, engine/inference/libtorch_backend.cpp) or OpenVINO on the exported ONNX
// (engine/inference/openvino_backend.cpp). Both give the same thing: each readable file's
// detections in its own pixels, masks pasted, and the files that could not be read.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

#include "engine/inference/image_input.h"
#include "engine/model/postprocess.h"

namespace mrcnn::engine {

struct BackendImage {
  InputImage input;  // the file and its size (height/width: the model's resized size, or 0)
  cv::Mat original;  // the decoded image (BGR), for overlays
  // Boxes xyxy in the file's pixels, scores, contiguous labels (1..num_classes-1), masks
  // uint8 0/1 [K, H, W] at the file's size (thresholded at 0.5), undefined without masks.
  model::ImageDetections detections;
};

struct BackendRun {
  std::vector<BackendImage> images;   // the readable files, in the order given
  std::vector<SkippedImage> skipped;  // the others, and why
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;
  // For the events: "LibTorch fp32 on cpu", "OpenVINO 2026.4 bf16 on CPU (…)".
  virtual std::string description() const = 0;
  // The short name of what it computes in: "fp32", "bf16", "f32"...
  virtual std::string precision() const = 0;
  virtual BackendRun run(const std::vector<std::filesystem::path>& paths) = 0;
  // The same for decoded images (BGR, 8 bits), in the order given: what the tiler runs its
  // tiles through (engine/inference/tiled_backend.h).
  virtual std::vector<model::ImageDetections> detect(const std::vector<cv::Mat>& images) = 0;
};

// `path` decoded and added to `out.images` (no detections yet); an unreadable file goes to
// `out.skipped` with why. Returns whether it was decoded.
bool decodeInto(BackendRun& out, const std::filesystem::path& path);

// run() for a backend that takes one decoded image at a time: each file decoded in turn
// (the unreadable ones skipped, with why) and its detections from `detect`.
BackendRun runFileByFile(const std::vector<std::filesystem::path>& paths,
                         const std::function<model::ImageDetections(const cv::Mat&)>& detect);

}  // namespace mrcnn::engine
