#include "eval/class_thresholds.h"

#include <simdjson.h>

#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "io/json_writer.h"

namespace mrcnn::eval {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& where,
                       const std::string& what) {
  throw std::runtime_error(path.string() + ": " + (where.empty() ? "" : where + ": ") + what);
}

}  // namespace

ClassThresholds loadClassThresholds(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(path, "", "no such thresholds file");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto error = parser.load(path.string()).get(doc)) {
    fail(path, "", std::string("not a JSON file (") + simdjson::error_message(error) + ")");
  }
  if (!doc.is_object()) fail(path, "", "expected a JSON object");

  ClassThresholds out;
  out.source = path.string();
  std::string prefix;
  simdjson::dom::element section = doc;
  if (doc["categories"].error()) {
    // A metrics file: the segm section if present, else bbox.
    for (const char* type : {"segm", "bbox"}) {
      simdjson::dom::element thresholds;
      if (doc[type]["thresholds"].get(thresholds) == simdjson::SUCCESS) {
        section = thresholds;
        prefix = std::string(type) + ".thresholds.";
        out.source += std::string(" (") + type + " section)";
        break;
      }
    }
    if (prefix.empty()) {
      fail(path, "",
           "no \"categories\" object (a thresholds file) and no bbox or segm \"thresholds\" "
           "section (a metrics file)");
    }
  }
  simdjson::dom::object categories;
  if (section["categories"].get(categories) != simdjson::SUCCESS) {
    fail(path, prefix + "categories", "expected an object of category id -> threshold");
  }
  for (auto [key, value] : categories) {
    const std::string where = prefix + "categories.\"" + std::string(key) + "\"";
    int64_t id = 0;
    try {
      std::size_t used = 0;
      id = std::stoll(std::string(key), &used);
      if (used != key.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      fail(path, where, "a category id must be a whole number");
    }
    if (value.is_null()) continue;
    simdjson::dom::element score = value;
    std::string at = where;
    if (value.is_object()) {
      if (value["score"].get(score) != simdjson::SUCCESS)
        fail(path, where, "expected {\"score\": number} or null");
      at += ".score";
    }
    double s = 0;
    if (score.get(s) != simdjson::SUCCESS) fail(path, at, "expected a number");
    if (!(s >= 0 && s <= 1)) fail(path, at, "a score threshold lies in [0, 1]");
    out.score[id] = s;
  }
  return out;
}

std::string classThresholdsJson(const ClassThresholds& thresholds, double iou) {
  std::ostringstream out;
  io::JsonWriter json(out);
  json.beginObject().key("iou").value(iou).key("source").value(thresholds.source);
  json.key("categories").beginObject();
  for (const auto& [id, score] : thresholds.score)
    json.key(std::to_string(id)).beginObject().key("score").value(score).endObject();
  json.endObject().endObject();
  return out.str() + "\n";
}

}  // namespace mrcnn::eval
