// A COCO annotation file opened for review and editing, with nothing lost: every edit and
// every review decision is appended to a journal (<name>.changes.jsonl beside the file) the
// moment it is made, one whole line a change, synced to disk; opening the file again replays
// the journal, so a crash or a closed window resumes where the review stopped. The original
// file is never written: Save writes the corrected copy beside it (<name>.reviewed.json),
// annotations nobody touched copied as they were written, other members (images,
// categories, info...) likewise. No Qt: the GUI's review and editor stand above it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dataset/mask/rle.h"

namespace mrcnn::review {

struct Annotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  std::vector<dataset::Polygon> polygons;  // a polygon segmentation (x0 y0 x1 y1 ...)
  std::optional<dataset::Rle> rle;         // or a mask
  dataset::Box bbox{};                     // x, y, w, h
  double area = 0;
  bool iscrowd = false;
  // Members this class does not edit ("score", "attributes"...), as JSON text `"k":v,...`.
  std::string extra;

  // The annotation as a COCO object (compact JSON).
  std::string json() const;
  friend bool operator==(const Annotation&, const Annotation&) = default;
};

// A decision on one finding of mistakes.json, keyed by the caller (image, annotation, kind).
enum class Decision { kAccepted, kRejected, kSkipped };
const char* decisionName(Decision d);

class AnnotationSet {
 public:
  // Opens `path` and replays its journal. Throws std::runtime_error naming the file and the
  // place (a line of the journal) when either cannot be read. A journal whose last line was
  // cut short by a crash loses only that line (journalWarning() says so).
  static AnnotationSet open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path journalPath() const;
  std::filesystem::path reviewedPath() const;
  const std::string& journalWarning() const { return journal_warning_; }

  // The list and the pointers below stay valid until the next change.
  const std::vector<Annotation>& annotations() const { return annotations_; }
  const Annotation* find(int64_t id) const;
  std::vector<const Annotation*> ofImage(int64_t image_id) const;
  int64_t nextId() const;

  // Each change is journalled, then applied; returns what was applied (an added annotation
  // gets the next id when its id is 0). Throws std::invalid_argument for an unknown or taken
  // id, std::runtime_error when the journal cannot be written (nothing is applied then).
  Annotation add(Annotation a);
  void remove(int64_t id);
  void update(const Annotation& after);
  void decide(const std::string& key, Decision decision);

  const std::map<std::string, Decision>& decisions() const { return decisions_; }
  size_t changes() const { return changes_; }  // edits made, replayed ones included
  bool edited(int64_t id) const;

  // The file with the edits: the original's members in their order, the annotations by id
  // of the original order (new ones at the end).
  std::string reviewedJson() const;
  // Writes reviewedJson() to reviewedPath() atomically; returns the path.
  std::filesystem::path saveReviewed() const;

 private:
  struct Slot {
    Annotation annotation;
    std::string raw;  // as the original wrote it; empty once edited or for a new one
  };
  void journal(const std::string& line);
  void applyAdd(const Annotation& a, std::string raw = {});
  void applyRemove(int64_t id);
  void applyUpdate(const Annotation& a);
  void replay();
  void rebuild();  // annotations_ from slots_

  std::filesystem::path path_;
  std::vector<std::pair<std::string, std::string>> members_;  // other top-level members, raw
  std::vector<Slot> slots_;                                   // kept in file order
  std::vector<Annotation> annotations_;
  std::unordered_map<int64_t, size_t> index_;  // id -> slot
  std::map<std::string, Decision> decisions_;
  size_t changes_ = 0;
  std::string journal_warning_;
};

// Where the journal of an annotation file is: "<name>.changes.jsonl" beside it.
std::filesystem::path journalPathOf(const std::filesystem::path& annotations);

// An annotation object (COCO JSON) read back; throws std::runtime_error with `place`.
Annotation parseAnnotation(std::string_view json, const std::string& place);

}  // namespace mrcnn::review
