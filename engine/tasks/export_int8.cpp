#include "engine/tasks/export_int8.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <system_error>

#include "dataset/image/decode_image.h"
#include "engine/export/bias_correction.h"
#include "engine/export/calibration.h"
#include "engine/inference/openvino_probe.h"
#include "engine/tasks/int8_layer_checks.h"
#include "io/scratch_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// The cache the user named, when it exists: for this model, or refused.
std::optional<exporter::CalibrationCache> cacheToReuse(const Int8Request& r,
                                                       const std::string& fingerprint) {
  std::error_code ec;
  if (r.cache_file.empty() || !fs::exists(r.cache_file, ec)) return std::nullopt;
  exporter::CalibrationCache cache;
  try {
    cache = exporter::readCalibrationCache(r.cache_file);
  } catch (const exporter::CalibrationCacheError& e) {
    throw Int8Refused("bad_calibration_cache", std::string("--cal_cache_file ") + e.what());
  }
  if (cache.fingerprint != fingerprint) {
    throw Int8Refused("bad_calibration_cache",
                      "--cal_cache_file " + r.cache_file.string() +
                          ": made for another model (spec " + cache.spec + ", weights " +
                          cache.weights + "); this export is of spec " + r.spec + ", weights " +
                          r.weights +
                          ". Give another --cal_cache_file, or delete this one, to calibrate anew");
  }
  return cache;
}

exporter::CalibrationCache calibrate(const Int8Request& r, const std::string& fingerprint,
                                     TaskReport& report) {
  // Every value either model of the pair check (below) quantises.
  const std::vector<std::string> values =
      exporter::calibrationValues(r.fp32_bytes, withPairs(r.policy));
  exporter::RangeCollector collector(r.percentile);
  // The input means of the layers reading them, for the bias correction.
  exporter::InputMeanCollector means(r.fp32_bytes);
  int64_t used = 0;
  {
    const io::ScratchFile probe_file(r.dir / ".calibration_probe.onnx",
                                     exporter::withProbeOutputs(r.fp32_bytes, values));
    OpenVinoProbe probe(probe_file.path(), values);
    for (const fs::path& file : r.images) {
      if (used >= r.image_limit) break;
      const dataset::DecodedImage image = dataset::readImageFile(file);
      if (!image.ok()) {
        report.warn("bad_image", file.string() + ": " + image.problem + "; not calibrated on");
        continue;
      }
      for (const auto& [name, tensor] : probe.run(image.bgr)) {
        collector.add(name, tensor);
        means.add(name, tensor);
      }
      ++used;
    }
  }
  if (used == 0) {
    throw Int8Refused("no_calibration_images", "int8 calibration: none of the " +
                                                   std::to_string(r.images.size()) +
                                                   " images could be read");
  }
  exporter::CalibrationCache cache;
  cache.fingerprint = fingerprint;
  cache.spec = r.spec;
  cache.weights = r.weights;
  cache.percentile = r.percentile;
  cache.images = used;
  cache.measured = {collector.ranges(), means.means()};
  return cache;
}

}  // namespace

Int8Result exportInt8(const Int8Request& r, TaskReport& report) {
  const std::string fingerprint = exporter::modelFingerprint(r.fp32_bytes);
  Int8Result out;
  const auto started = std::chrono::steady_clock::now();
  std::optional<exporter::CalibrationCache> cache = cacheToReuse(r, fingerprint);
  if (cache) {
    out.cache_reused = true;
    out.cache = r.cache_file;
    report.log("int8: calibration ranges from " + r.cache_file.string() + " (" +
               std::to_string(cache->images) + " images, percentile " +
               std::to_string(cache->percentile) + ")");
  } else {
    if (r.images.empty()) {
      throw Int8Refused("no_calibration_images",
                        "int8 needs calibration images: give --cal_image_dir DIR, or a spec "
                        "whose validation images exist");
    }
    report.log("int8: calibrating on up to " + std::to_string(r.image_limit) + " of " +
               std::to_string(r.images.size()) + " images with OpenVINO f32");
    cache = calibrate(r, fingerprint, report);
    out.cache = r.cache_file.empty() ? r.dir / "calibration_cache.json" : r.cache_file;
  }
  if (r.policy.bias_correction && cache->measured.input_means.empty()) {
    report.warn("calibration_cache_without_means",
                out.cache.string() + ": made before the int8 export corrected biases (no "
                "\"input_means\"): the biases are kept as they are; delete it, or give another "
                "--cal_cache_file, to calibrate anew with the correction");
  }
  out.images = cache->images;
  out.percentile = cache->percentile;
  out.calibration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  exporter::Int8Policy policy = r.policy;
  if (r.choose_range) {
    const bool measured = !cache->range_choice;
    if (measured) {
      try {
        cache->range_choice = decideRange(r, cache->measured, policy);
      } catch (const std::invalid_argument& e) {
        throw Int8Refused("bad_calibration_cache", out.cache.string() + ": " + e.what());
      }
    }
    const exporter::CalibrationCache::RangeDecision& d = *cache->range_choice;
    policy.range = d.range == "minmax" ? exporter::RangeChoice::kMinMax
                                       : exporter::RangeChoice::kPercentile;
    out.range_why = (measured ? "" : "chosen when the calibration cache was made: ") + d.why;
    report.log("int8: activation ranges " + std::string(d.range == "minmax" ? "min/max" : "percentile") +
               " (" + out.range_why + ")");
  }
  out.range = policy.range == exporter::RangeChoice::kMinMax ? "minmax" : "percentile";
  try {
    out.model = exporter::quantizeQdq(r.fp32_bytes, cache->measured, policy);
  } catch (const std::invalid_argument& e) {
    throw Int8Refused("bad_calibration_cache", out.cache.string() + ": " + e.what());
  }
  if (policy.float_after_quantised)
    out.model = decidePairs(r, cache->measured, std::move(out.model), policy, report);
  out.model = decideFullyConnected(r, cache->measured, std::move(out.model), policy,
                                   cache->fully_connected, report);
  // Written once the timing is in it, so that a reuse builds this model again. A reused
  // cache is left as the user made it.
  if (!out.cache_reused) {
    exporter::writeCalibrationCache(r.dir / "calibration_cache.json", *cache);
    if (!r.cache_file.empty()) exporter::writeCalibrationCache(r.cache_file, *cache);
  }
  int64_t quantised = 0;
  for (const exporter::LayerDecision& d : out.model.layers)
    quantised += d.quantised ? 1 : 0;
  report.log("int8: " + std::to_string(quantised) + " of " +
             std::to_string(out.model.layers.size()) +
             " convolution and fully connected layers quantised; the rest stay float");
  return out;
}

}  // namespace mrcnn::engine
