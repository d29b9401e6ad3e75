#include "engine/tasks/int8_layer_checks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <vector>

#include "dataset/image/decode_image.h"
#include "engine/export/detection_parity.h"
#include "engine/inference/openvino_probe.h"
#include "engine/validation/export_report.h"
#include "io/scratch_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// Images the pair check runs on: the first calibration images.
constexpr size_t kPairCheckImages = 4;
// How much lower the agreement with fp32 may be with the pairs in int8 than with them float.
constexpr double kPairCheckSlack = 0.05;
// Images the range check runs on (a choice for every layer: more images than the pairs').
constexpr size_t kRangeCheckImages = 8;

// fp32's detections that each of two int8 models keeps.
struct TwoModels {
  int64_t images = 0, reference = 0;
  int64_t agreed_first = 0, agreed_second = 0;
  double share(int64_t agreed) const {
    return reference > 0 ? static_cast<double>(agreed) / static_cast<double>(reference) : 0.0;
  }
};

// The first `count` calibration images that decode (a check's images).
std::vector<cv::Mat> firstImages(const Int8Request& r, size_t count) {
  std::vector<cv::Mat> images;
  for (const fs::path& file : r.images) {
    if (images.size() >= count) break;
    dataset::DecodedImage image = dataset::readImageFile(file);
    if (image.ok()) images.push_back(image.bgr);
  }
  return images;
}

model::ImageDetections detectionsOf(std::map<std::string, at::Tensor> out) {
  model::ImageDetections d;
  d.boxes = out.at("boxes").clone();
  d.scores = out.at("scores").clone();
  d.labels = out.at("labels").clone();
  return d;
}

// OpenVINO's detections of the fp32 export against those of two int8 models on the first
// `count` calibration images, under the int8 agreement's tolerance (masks aside).
TwoModels checkTwo(const Int8Request& r, const exporter::Int8Model& first,
                   const exporter::Int8Model& second, size_t count) {
  const io::ScratchFile first_file(r.dir / ".check_first.onnx", first.bytes);
  const io::ScratchFile second_file(r.dir / ".check_second.onnx", second.bytes);
  const std::vector<std::string> outputs{"boxes", "labels", "scores"};
  OpenVinoProbe fp32(r.dir / "model.onnx", outputs), a(first_file.path(), outputs),
      b(second_file.path(), outputs);
  TwoModels check;
  for (const cv::Mat& bgr : firstImages(r, count)) {
    const model::ImageDetections reference = detectionsOf(fp32.run(bgr));
    const exporter::ImageParity pa =
        exporter::compareDetections(detectionsOf(a.run(bgr)), reference, kInt8Tolerance);
    const exporter::ImageParity pb =
        exporter::compareDetections(detectionsOf(b.run(bgr)), reference, kInt8Tolerance);
    ++check.images;
    check.reference += pa.reference;
    check.agreed_first += pa.agreed;
    check.agreed_second += pb.agreed;
  }
  return check;
}

std::string share(double v) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

}  // namespace

exporter::Int8Policy withPairs(exporter::Int8Policy policy) {
  policy.float_after_quantised = false;
  return policy;
}

// The layers that read a quantised layer's output directly (the FPN's top 3x3, the RPN's
// shared 3x3) run in int8 where that keeps the detections: OpenVINO 2026.4's CPU plugin
// computes such a pair wrong where the first layer's bias is all zero (zeros: the seeded
// R50-FPN's detections all changed without the bias correction), and elsewhere int8 there
// may cost more detections than the slack allows (the seeded R50-FPN with the correction:
// ONNX Runtime loses as many). Which, is measured here on the first calibration images;
// the decision and its numbers go into each pair layer's reason.
exporter::Int8Model decidePairs(const Int8Request& r, const exporter::Calibration& calibration,
                                exporter::Int8Model pairs_float, exporter::Int8Policy& policy,
                                TaskReport& report) {
  exporter::Int8Model pairs_int8;
  try {
    pairs_int8 = exporter::quantizeQdq(r.fp32_bytes, calibration, withPairs(policy));
  } catch (const std::invalid_argument& e) {
    report.log(std::string("int8: the layers that read a quantised layer's output stay float: ") +
               "the calibration ranges lack their inputs (" + e.what() + ")");
    return pairs_float;
  }
  std::vector<size_t> pairs;
  for (size_t i = 0; i < pairs_float.layers.size(); ++i) {
    if (!pairs_float.layers[i].quantised && pairs_int8.layers[i].quantised) pairs.push_back(i);
  }
  if (pairs.empty()) return pairs_float;
  const TwoModels check = checkTwo(r, pairs_float, pairs_int8, kPairCheckImages);
  const double with = check.share(check.agreed_second), without = check.share(check.agreed_first);
  const bool take = check.reference > 0 && with >= without - kPairCheckSlack;
  const std::string measured =
      check.reference == 0
          ? "the fp32 model detected nothing on the " + std::to_string(check.images) +
                " images checked, so int8 could not be checked there"
          : "of fp32's " + std::to_string(check.reference) + " detections on " +
                std::to_string(check.images) + " calibration images, " + share(with) +
                " agree with these layers int8, " + share(without) + " with them float";
  report.log("int8: " + std::to_string(pairs.size()) +
             " layers that read a quantised layer's output directly " +
             (take ? "run in int8" : "stay float") + " (" + measured + ")");
  if (take) policy = withPairs(policy);
  exporter::Int8Model& chosen = take ? pairs_int8 : pairs_float;
  for (size_t i : pairs) {
    std::string& why = chosen.layers[i].why;
    why += take ? "; it reads a quantised layer's output directly, checked: " + measured
                : " (checked: " + measured + ")";
  }
  return std::move(chosen);
}

// Both activation ranges tried: each tensor's min/max, and its percentile range (which clips
// the rare values beyond it; better where a few outliers would waste the 8 bits, worse where
// those values carry the detections). Their models' detections are compared with fp32's on
// the first calibration images, and the one that keeps more of them is taken (the percentile
// on a tie: the historic default).
exporter::CalibrationCache::RangeDecision decideRange(const Int8Request& r,
                                                      const exporter::Calibration& calibration,
                                                      exporter::Int8Policy policy) {
  policy.range = exporter::RangeChoice::kPercentile;
  const exporter::Int8Model percentile = exporter::quantizeQdq(r.fp32_bytes, calibration, policy);
  policy.range = exporter::RangeChoice::kMinMax;
  const exporter::Int8Model minmax = exporter::quantizeQdq(r.fp32_bytes, calibration, policy);
  const TwoModels check = checkTwo(r, percentile, minmax, kRangeCheckImages);
  const bool take_minmax = check.agreed_second > check.agreed_first;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%g", r.percentile);
  exporter::CalibrationCache::RangeDecision d;
  d.range = take_minmax ? "minmax" : "percentile";
  d.why = check.reference == 0
              ? "the fp32 model detected nothing on the " + std::to_string(check.images) +
                    " images checked; the percentile range kept"
              : "of fp32's " + std::to_string(check.reference) + " detections on " +
                    std::to_string(check.images) + " calibration images, " +
                    share(check.share(check.agreed_first)) + " agree with the " + pct +
                    " percentile ranges, " + share(check.share(check.agreed_second)) +
                    " with min/max";
  return d;
}

namespace {

// Images and rounds the fully connected layers are timed on (the first calibration images;
// each image's fastest round counts, the two models alternating image by image so that a
// busy moment of the machine falls on both).
constexpr size_t kTimingImages = 2;
constexpr int kTimingRounds = 3;
// How much faster float must be for those layers to stay float: below it, timing noise.
constexpr double kTimingMargin = 0.03;

double millisecondsOf(OpenVinoProbe& probe, const cv::Mat& bgr) {
  const auto start = std::chrono::steady_clock::now();
  probe.run(bgr);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

exporter::LayerTiming timeBoth(const Int8Request& r, const exporter::Int8Model& int8,
                               const exporter::Int8Model& floated) {
  const io::ScratchFile int8_file(r.dir / ".timing_int8.onnx", int8.bytes);
  const io::ScratchFile float_file(r.dir / ".timing_float.onnx", floated.bytes);
  const std::vector<cv::Mat> images = firstImages(r, kTimingImages);
  const std::vector<std::string> outputs{"scores"};
  OpenVinoProbe a(int8_file.path(), outputs), b(float_file.path(), outputs);
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<double> best_a(images.size(), kNone), best_b(images.size(), kNone);
  if (!images.empty()) {  // warm-up: the first run of a compiled model allocates
    a.run(images.front());
    b.run(images.front());
  }
  for (int round = 0; round < kTimingRounds; ++round) {
    for (size_t i = 0; i < images.size(); ++i) {
      const bool a_first = (round + static_cast<int>(i)) % 2 == 0;
      if (a_first) best_a[i] = std::min(best_a[i], millisecondsOf(a, images[i]));
      best_b[i] = std::min(best_b[i], millisecondsOf(b, images[i]));
      if (!a_first) best_a[i] = std::min(best_a[i], millisecondsOf(a, images[i]));
    }
  }
  exporter::LayerTiming timing;
  timing.images = static_cast<int64_t>(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    timing.int8_ms += best_a[i] / static_cast<double>(images.size());
    timing.float_ms += best_b[i] / static_cast<double>(images.size());
  }
  return timing;
}

std::string milliseconds(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", v);
  return text;
}

}  // namespace

exporter::Int8Model decideFullyConnected(const Int8Request& r,
                                         const exporter::Calibration& calibration,
                                         exporter::Int8Model chosen,
                                         const exporter::Int8Policy& policy,
                                         std::optional<exporter::LayerTiming>& timing,
                                         TaskReport& report) {
  std::vector<size_t> layers;
  exporter::Int8Policy floated_policy = policy;
  for (size_t i = 0; i < chosen.layers.size(); ++i) {
    const exporter::LayerDecision& d = chosen.layers[i];
    if (d.op != "Gemm" || !d.quantised) continue;
    layers.push_back(i);
    floated_policy.keep_float.emplace_back(d.weight, "a fully connected layer");
  }
  if (layers.empty()) return chosen;
  exporter::Int8Model floated = exporter::quantizeQdq(r.fp32_bytes, calibration, floated_policy);
  // The other layers are decided as in `chosen`, with the reasons earlier checks gave them.
  for (size_t i = 0; i < floated.layers.size(); ++i) {
    if (std::find(layers.begin(), layers.end(), i) == layers.end())
      floated.layers[i].why = chosen.layers[i].why;
  }
  const bool cached = timing.has_value();
  if (!cached) {
    const exporter::LayerTiming measured = timeBoth(r, chosen, floated);
    if (measured.images == 0) return chosen;
    timing = measured;
  }
  const exporter::LayerTiming& t = *timing;
  const bool to_float = t.float_ms < t.int8_ms * (1.0 - kTimingMargin);
  const std::string measured = (cached ? std::string("timed when the calibration cache was made: ")
                                       : "timed with OpenVINO, the best of " +
                                             std::to_string(kTimingRounds) + " rounds on ") +
                               std::to_string(t.images) + " calibration images: " +
                               milliseconds(t.int8_ms) + " an image with the " +
                               std::to_string(layers.size()) +
                               " fully connected layers int8, " + milliseconds(t.float_ms) +
                               " with them float";
  const std::string cpu = cached ? "on the CPU that made the cache" : "on this CPU";
  report.log("int8: the fully connected layers " +
             (to_float ? "stay float: int8 is slower " + cpu
                       : "run in int8: float is no faster " + cpu) +
             " (" + measured + ")");
  exporter::Int8Model& kept = to_float ? floated : chosen;
  for (size_t i : layers) {
    std::string& why = kept.layers[i].why;
    why += to_float ? ": int8 is slower " + cpu + " (" + measured + ")" : "; " + measured;
  }
  return std::move(kept);
}

}  // namespace mrcnn::engine
