// A corrected copy of a COCO annotation file: chosen annotations dropped, chosen boxes clipped
// to their image. The copy is the original's bytes with only those spans changed (an
// annotation's object with its separating comma, the changed numbers of a bbox), so key order,
// number spellings, unknown keys and whitespace all stay as they were: everything not chosen
// is unchanged byte for byte. A clipped box keeps its "area" (COCO's area is the mask's).
//
// The file is scanned, not parsed into a tree: a malformed file is reported with the byte
// offset of the fault, and a 450 MB file costs one pass.
#pragma once

#include <QString>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mrcnn::ui {

struct AnnotationCorrections {
  std::set<int64_t> drop;  // annotation ids left out of the copy
  std::set<int64_t> clip;  // annotation ids whose bbox is clipped to [0, width] x [0, height]
  bool empty() const { return drop.empty() && clip.empty(); }
};

struct CorrectionSummary {
  std::vector<int64_t> dropped;
  std::vector<int64_t> clipped;           // boxes that changed
  std::vector<int64_t> already_inside;    // asked to clip, but already within the image
  std::vector<int64_t> empty_after_clip;  // clipped to zero width or height: drop them instead?
  std::vector<int64_t> not_found;         // ids the file does not hold (or whose image it lacks)
};

class CorrectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where an annotation's object lies in the file, with the values the review needs.
struct RawAnnotation {
  size_t begin = 0;  // the object's '{'
  size_t end = 0;    // one past its '}'
  int64_t image_id = 0;
  std::optional<std::array<double, 4>> bbox;
};

// The annotations of a COCO file by id (the first of duplicate ids), and image sizes by id
// (w, h). Throws CorrectionError "<name>: byte N: <what>" on malformed JSON.
struct RawIndex {
  std::unordered_map<int64_t, RawAnnotation> annotations;
  std::unordered_map<int64_t, std::pair<double, double>> image_sizes;
};
RawIndex indexAnnotations(std::string_view json, const std::string& name);

// The corrected text. Throws CorrectionError on malformed JSON.
std::string correctAnnotations(std::string_view json, const AnnotationCorrections& corrections,
                               const std::string& name, CorrectionSummary* summary = nullptr);

// Reads `input`, writes the corrected copy to `output` (atomically). Refuses (CorrectionError)
// an output that is the input itself (same path, link or hard link) or an empty choice.
CorrectionSummary exportCorrectedCopy(const QString& input, const QString& output,
                                      const AnnotationCorrections& corrections);

}  // namespace mrcnn::ui
