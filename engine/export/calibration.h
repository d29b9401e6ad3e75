// int8 calibration: the ranges of the activations the quantised layers read
// (quantize_qdq.h), measured over calibration images, and the cache file that keeps them with
// the layers' input means for the bias correction (bias_correction.h).
//
// Per image and activation: its minimum and maximum, and the values at the percentile's two
// ends from a histogram of 2048 bins over [min, max]. Over the images: the extremes of the
// extremes, the mean of the percentile values.
//
// The cache (JSON) names the model it was measured on by a fingerprint of the fp32 graph
// (SHA-256 of its nodes and weights) and the spec and weights it came from; a cache whose
// fingerprint differs is refused with those names.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/export/quantize_qdq.h"

namespace mrcnn::exporter {

class RangeCollector {
 public:
  explicit RangeCollector(double percentile = 99.99) : percentile_(percentile) {}
  // One image's values of an activation (any shape; an empty tensor counts nothing).
  void add(const std::string& value, const at::Tensor& tensor);
  // Over the images added so far.
  ActivationRanges ranges() const;
  double percentile() const { return percentile_; }

 private:
  double percentile_;
  ActivationRanges sums_;  // low and high summed over the images
};

// The time per image of the int8 model with its fully connected layers int8 and with them
// float, measured on the machine that calibrated (engine/tasks/int8_layer_checks.h).
struct LayerTiming {
  int64_t images = 0;
  double int8_ms = 0, float_ms = 0;
};

struct CalibrationCache {
  std::string fingerprint;
  std::string spec, weights;  // where the model came from, for the refusal's message
  double percentile = 99.99;
  int64_t images = 0;
  // The ranges, and the input means (empty in a cache written before the bias correction).
  Calibration measured;
  // Kept with the ranges so that a reused cache builds the same model; absent in a cache
  // written before the export timed them.
  std::optional<LayerTiming> fully_connected;
  // The range the export chose by measuring (--cal_range auto) and what it measured; absent
  // when the user named the range, or in a cache written before the export chose.
  struct RangeDecision {
    std::string range;  // "percentile" or "minmax"
    std::string why;
  };
  std::optional<RangeDecision> range_choice;
};

// The fp32 model's fingerprint: its graph, without the file's metadata.
std::string modelFingerprint(const std::string& model_bytes);

class CalibrationCacheError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void writeCalibrationCache(const std::filesystem::path& file, const CalibrationCache& cache);
// Throws CalibrationCacheError naming the file and the place when it cannot be read.
CalibrationCache readCalibrationCache(const std::filesystem::path& file);

}  // namespace mrcnn::exporter
