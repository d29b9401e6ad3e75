// The export task's int8 stage (--data_type int8): the fp32 export's activation ranges,
// measured with OpenVINO on calibration images (engine/export/calibration.h) or read from a
// cache made for the same model, and the QDQ model built from them
// (engine/export/quantize_qdq.h). Two choices are then measured on the first calibration images
// (engine/tasks/int8_layer_checks.h): the layers that read a quantised layer's output directly
// run in int8 where that keeps OpenVINO's detections as they are with them float, and the
// fully connected layers where int8 is faster than float on this CPU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/events/task_report.h"
#include "engine/export/quantize_qdq.h"

namespace mrcnn::engine {

struct Int8Request {
  std::string fp32_bytes;                     // the serialized model.onnx
  std::filesystem::path dir;  // the export's folder (staging): model.onnx, probe and cache
  std::vector<std::filesystem::path> images;  // calibration images, in order (the first N used)
  int64_t image_limit = 10;
  std::filesystem::path cache_file;  // the user's --cal_cache_file, or empty
  std::string spec, weights;         // what the model came from, for the cache
  exporter::Int8Policy policy;
  double percentile = 99.99;
  // --cal_range auto: policy.range is chosen by measuring both (int8_layer_checks.h).
  bool choose_range = false;
};

struct Int8Result {
  exporter::Int8Model model;
  std::filesystem::path cache;  // the cache read or written (the user's file, else the export's)
  bool cache_reused = false;
  int64_t images = 0;  // calibration images measured (or in the reused cache)
  double percentile = 99.99;
  double calibration_seconds = 0;
  std::string range;      // the activation range the model was built with
  std::string range_why;  // how it was chosen (empty when the user named it)
};

// A cache that is not for this model, or nothing to calibrate on: the task refuses
// (`code` for the event, the message names the file).
class Int8Refused : public std::runtime_error {
 public:
  Int8Refused(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// Progress goes to `report`. Throws Int8Refused, or std::runtime_error when OpenVINO fails.
Int8Result exportInt8(const Int8Request& request, TaskReport& report);

}  // namespace mrcnn::engine
