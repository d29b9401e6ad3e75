#include "eval/metrics_record.h"

#include <simdjson.h>

#include <system_error>

namespace mrcnn::eval {

std::optional<RecordedAp> readRecordedAp(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  RecordedAp ap;
  if (parser.load(path.string()).get(doc) != simdjson::SUCCESS ||
      doc["bbox"]["stats"].at(0).get(ap.bbox) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  double segm = 0;
  if (doc["segm"]["stats"].at(0).get(segm) == simdjson::SUCCESS) ap.segm = segm;
  return ap;
}

}  // namespace mrcnn::eval
