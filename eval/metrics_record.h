// Reading back what an evaluation wrote (eval/step-N.json, metricsJson's format).
#pragma once

#include <filesystem>
#include <optional>

namespace mrcnn::eval {

// The AP (stats[0]) of each type in a metrics file: bbox, and segm where the model has
// masks. Nothing when the file is missing or does not hold them.
struct RecordedAp {
  double bbox = 0;
  std::optional<double> segm;
};
std::optional<RecordedAp> readRecordedAp(const std::filesystem::path& path);

}  // namespace mrcnn::eval
