// The warnings of a converted dataset, read for the review: TAO's `<tag>_warnings.json`
// ({"<image id>": {"box": [annotation ids], "mask": [...]}}) or our `<tag>_report.json`
// ({"summary": {...}, "problems": [{kind, image_id, annotation_id, file, message}]}), told
// apart by their shape. Plus the review marks kept beside the report.
#pragma once

#include <QSet>
#include <QString>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace mrcnn::ui {

struct WarningEntry {
  QString kind;  // the report's kind, or tao_box / tao_mask for TAO's file
  std::optional<int64_t> image_id;
  std::optional<int64_t> annotation_id;
  QString file;
  QString message;

  // Identifies the entry across sessions (the review marks): "kind/image/annotation".
  QString key() const;
};

struct WarningReport {
  QString path;
  bool tao_format = false;
  std::vector<WarningEntry> entries;  // in the file's order
};

class WarningReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws WarningReportError naming the file and the place ("r.json: problems[3].kind: ...").
WarningReport readWarningReport(const QString& path);

// A readable title for a kind ("Box out of its image").
QString kindTitle(const QString& kind);
// Kinds where the fix is about the box (clip it), and kinds that concern an annotation at all.
bool isBoxKind(const QString& kind);

// "<report>.reviewed.json": {"report": "<file name>", "reviewed": [keys...]}.
QString reviewedPath(const QString& report);
QSet<QString> readReviewed(const QString& report);  // empty when there is no such file
// Written atomically; throws WarningReportError when it cannot be.
void writeReviewed(const QString& report, const QSet<QString>& keys);

}  // namespace mrcnn::ui
