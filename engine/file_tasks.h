// Which tasks run on annotation files alone, with no model and no image decoding: mrcnn-data
// runs them without loading LibTorch or OpenCV's decoders (milliseconds, not a second, to
// start), mrcnn-engine runs them the same way, and the headless launcher starts mrcnn-data
// for them. Header-only: the launcher links no engine code.
#pragma once

#include <string_view>

namespace mrcnn::engine {

inline constexpr const char* kFileTaskProgram = "mrcnn-data";

// dataset_import; dataset_stats, evaluate and label_check on files (without --spec).
inline bool isFileTask(std::string_view task, bool has_spec) {
  if (task == "dataset_import") return true;
  return !has_spec && (task == "dataset_stats" || task == "evaluate" || task == "label_check");
}

}  // namespace mrcnn::engine
