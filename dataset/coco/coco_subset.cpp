#include "dataset/coco/coco_subset.h"

#include <simdjson.h>

#include "dataset/coco/coco.h"

namespace mrcnn::dataset {

std::string cocoSubset(const std::filesystem::path& path, const std::set<int64_t>& image_ids) {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path.string()).get(text))
    throw CocoError(path.string(), "cannot be read");
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (const auto error = parser.parse(text).get(root))
    throw CocoError(path.string(), simdjson::error_message(error));
  const auto idOf = [&](simdjson::dom::element e, const char* key, const std::string& place) {
    int64_t id = 0;
    if (e[key].get_int64().get(id))
      throw CocoError(path.string(), place + ": no integer \"" + key + "\"");
    return id;
  };
  std::string out = "{";
  bool first_member = true;
  bool saw_images = false, saw_annotations = false;
  for (auto [key, value] : root) {
    if (!first_member) out += ',';
    first_member = false;
    out += '"';
    out += std::string(key);  // COCO's member names need no escaping
    out += "\":";
    const bool images = key == "images", annotations = key == "annotations";
    if (!images && !annotations) {
      out += simdjson::to_string(value);
      continue;
    }
    simdjson::dom::array list;
    if (value.get_array().get(list))
      throw CocoError(path.string(), std::string(key) + ": expected an array");
    (images ? saw_images : saw_annotations) = true;
    out += '[';
    bool first = true;
    size_t index = 0;
    for (simdjson::dom::element e : list) {
      const std::string place = std::string(key) + "[" + std::to_string(index++) + "]";
      if (image_ids.count(idOf(e, images ? "id" : "image_id", place)) == 0) continue;
      if (!first) out += ',';
      first = false;
      out += simdjson::to_string(e);
    }
    out += ']';
  }
  if (!saw_images || !saw_annotations)
    throw CocoError(path.string(), "a COCO file needs \"images\" and \"annotations\" arrays");
  out += "}\n";
  return out;
}

}  // namespace mrcnn::dataset
