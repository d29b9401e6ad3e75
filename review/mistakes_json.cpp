#include "review/mistakes_json.h"

#include <simdjson.h>

#include <sstream>
#include <stdexcept>

#include "io/json_writer.h"

namespace mrcnn::review {

std::string mistakesJson(const MistakesFile& file) {
  std::ostringstream out;
  io::JsonWriter w(out);
  w.beginObject();
  w.key("annotations").value(file.annotations);
  w.key("results");
  if (file.results) {
    w.value(*file.results);
  } else {
    w.value(nullptr);
  }
  if (file.image_dir) w.key("image_dir").value(*file.image_dir);
  w.key("typical_overlap").value(file.typical_overlap);
  w.key("mistakes").beginArray();
  for (const Mistake& m : file.mistakes) {
    w.beginObject();
    w.key("image_id").value(m.image_id);
    w.key("annotation_id");
    if (m.annotation_id) {
      w.value(*m.annotation_id);
    } else {
      w.value(nullptr);
    }
    w.key("kind").value(kindName(m.kind));
    w.key("score").value(m.score);
    w.key("suggestion");
    if (m.suggestion) {
      const Suggestion& s = *m.suggestion;
      w.beginObject();
      w.key("category_id").value(s.category_id);
      w.key("bbox").beginArray();
      for (const double v : s.bbox) w.value(v);
      w.endArray();
      w.key("segmentation");
      if (s.mask) {
        w.beginObject();
        w.key("size").beginArray().value(s.mask->h).value(s.mask->w).endArray();
        w.key("counts").value(dataset::toCompressedString(*s.mask));
        w.endObject();
      } else {
        w.value(nullptr);
      }
      w.endObject();
    } else {
      w.value(nullptr);
    }
    w.key("detail").value(m.detail);
    w.endObject();
  }
  w.endArray();
  w.endObject();
  out << '\n';
  return out.str();
}

namespace {

using simdjson::dom::element;

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& place, const std::string& why) const {
    throw std::runtime_error(file_ + ": " + place + ": " + why);
  }
  element member(element object, const char* key, const std::string& place) const {
    element e;
    if (object[key].get(e)) fail(place + "." + key, "missing");
    return e;
  }
  double number(element e, const std::string& place) const {
    double d = 0;
    if (e.get_double().get(d)) fail(place, "expected a number");
    return d;
  }
  int64_t integer(element e, const std::string& place) const {
    int64_t i = 0;
    if (e.get_int64().get(i)) fail(place, "expected an integer");
    return i;
  }
  std::string text(element e, const std::string& place) const {
    std::string_view s;
    if (e.get_string().get(s)) fail(place, "expected a string");
    return std::string(s);
  }

  Suggestion suggestion(element e, const std::string& place) const {
    Suggestion s;
    s.category_id = integer(member(e, "category_id", place), place + ".category_id");
    simdjson::dom::array box;
    if (member(e, "bbox", place).get_array().get(box) || box.size() != 4)
      fail(place + ".bbox", "expected [x, y, w, h]");
    size_t k = 0;
    for (element v : box) s.bbox[k++] = number(v, place + ".bbox");
    const element seg = member(e, "segmentation", place);
    if (!seg.is_null()) {
      const std::string at = place + ".segmentation";
      simdjson::dom::array size;
      if (member(seg, "size", at).get_array().get(size) || size.size() != 2)
        fail(at + ".size", "expected [h, w]");
      const auto h = static_cast<uint32_t>(integer(size.at(0), at + ".size"));
      const auto w = static_cast<uint32_t>(integer(size.at(1), at + ".size"));
      try {
        s.mask = dataset::fromCompressedString(text(member(seg, "counts", at), at + ".counts"), h, w);
      } catch (const std::exception& ex) {
        fail(at + ".counts", ex.what());
      }
    }
    return s;
  }

 private:
  std::string file_;
};

}  // namespace

MistakesFile readMistakesJson(const std::filesystem::path& path) {
  const Reader r(path.string());
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path.string()).get(text)) r.fail("file", "cannot be read");
  element root;
  if (const auto error = parser.parse(text).get(root)) r.fail("file", simdjson::error_message(error));
  MistakesFile file;
  file.annotations = r.text(r.member(root, "annotations", "top level"), "annotations");
  const element results = r.member(root, "results", "top level");
  if (!results.is_null()) file.results = r.text(results, "results");
  element image_dir;
  if (!root["image_dir"].get(image_dir) && !image_dir.is_null()) file.image_dir = r.text(image_dir, "image_dir");
  element typical;
  if (!root["typical_overlap"].get(typical)) file.typical_overlap = r.number(typical, "typical_overlap");
  simdjson::dom::array list;
  if (r.member(root, "mistakes", "top level").get_array().get(list)) r.fail("mistakes", "expected an array");
  size_t index = 0;
  for (element e : list) {
    const std::string place = "mistakes[" + std::to_string(index++) + "]";
    Mistake m;
    m.image_id = r.integer(r.member(e, "image_id", place), place + ".image_id");
    const element ann = r.member(e, "annotation_id", place);
    if (!ann.is_null()) m.annotation_id = r.integer(ann, place + ".annotation_id");
    const std::string kind = r.text(r.member(e, "kind", place), place + ".kind");
    const std::optional<MistakeKind> k = kindFromName(kind);
    if (!k) r.fail(place + ".kind", "unknown kind \"" + kind + "\"");
    m.kind = *k;
    m.score = r.number(r.member(e, "score", place), place + ".score");
    const element sug = r.member(e, "suggestion", place);
    if (!sug.is_null()) m.suggestion = r.suggestion(sug, place + ".suggestion");
    element detail;
    if (!e["detail"].get(detail)) m.detail = r.text(detail, place + ".detail");
    file.mistakes.push_back(std::move(m));
  }
  return file;
}

}  // namespace mrcnn::review
