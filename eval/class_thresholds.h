// Per-class score thresholds for inference (--thresholds FILE): read from an evaluation's
// metrics file (its "thresholds" section, the F1-best score per class) or from a thresholds
// file as the GUI's analysis view saves it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace mrcnn::eval {

struct ClassThresholds {
  std::map<int64_t, double> score;  // category id -> keep detections scoring at least this
  std::string source;               // where they came from, for the log: "FILE (bbox section)"
};

// Accepts
//   {"categories": {"<id>": {"score": s, ...} | s | null, ...}, ...}   (a thresholds section or
//                                                                       the GUI's file)
//   {"bbox": {"thresholds": {...}}, "segm": {...}}                    (a metrics file: its segm
//                                                                       section if it has one,
//                                                                       else bbox)
// A null or absent category keeps its detections unfiltered. Throws std::runtime_error naming
// the file and the place in it ("FILE: categories.\"3\".score: ...") for anything else: not
// JSON, no categories, an id that is not a whole number, a score outside [0, 1].
ClassThresholds loadClassThresholds(const std::filesystem::path& path);

// The thresholds file the GUI saves and loadClassThresholds reads: {"iou": iou, "source":
// source, "categories": {"<id>": {"score": s}}}.
std::string classThresholdsJson(const ClassThresholds& thresholds, double iou);

}  // namespace mrcnn::eval
