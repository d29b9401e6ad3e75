// mistakes.json, the label check's output and the label review's input:
//   {"annotations": "<file>", "results": "<file>" | null, "image_dir": "<folder>" (when
//    known), "typical_overlap": 0.87,
//    "mistakes": [{"image_id", "annotation_id" | null, "kind", "score",
//                  "suggestion": {"category_id", "bbox", "segmentation"} | null, "detail"}]}
// sorted by score, highest first. A suggestion's segmentation is a compressed RLE
// ({"size": [h, w], "counts": "..."}, pycocotools' form) or null (keep the annotation's).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "review/mistake_finder.h"

namespace mrcnn::review {

struct MistakesFile {
  std::string annotations;
  std::optional<std::string> results;  // none: the model ran inside the check
  std::optional<std::string> image_dir;  // where the annotations' images are, when known
  double typical_overlap = 0;
  std::vector<Mistake> mistakes;
};

std::string mistakesJson(const MistakesFile& file);

// Reads a mistakes.json; throws std::runtime_error naming the file and the place in it
// ("mistakes[3].kind: unknown kind \"wrong\"").
MistakesFile readMistakesJson(const std::filesystem::path& path);

}  // namespace mrcnn::review
