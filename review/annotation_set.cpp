#include "review/annotation_set.h"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

#include "io/atomic_file.h"
#include "io/json_writer.h"

namespace mrcnn::review {
namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;

[[noreturn]] void fail(const std::string& place, const std::string& why) {
  throw std::runtime_error(place + ": " + why);
}

double number(element e, const std::string& place) {
  double d = 0;
  if (e.get_double().get(d)) fail(place, "expected a number");
  return d;
}

int64_t integer(element e, const std::string& place) {
  int64_t i = 0;
  if (e.get_int64().get(i)) {
    double d = 0;  // 7.0 is an id too
    if (e.get_double().get(d) || d != static_cast<double>(static_cast<int64_t>(d)))
      fail(place, "expected an integer");
    i = static_cast<int64_t>(d);
  }
  return i;
}

Annotation fromElement(element e, const std::string& place) {
  simdjson::dom::object object;
  if (e.get_object().get(object)) fail(place, "expected an object");
  Annotation a;
  bool has_id = false;
  for (auto [key, value] : object) {
    const std::string at = place + "." + std::string(key);
    if (key == "id") {
      a.id = integer(value, at);
      has_id = true;
    } else if (key == "image_id") {
      a.image_id = integer(value, at);
    } else if (key == "category_id") {
      a.category_id = integer(value, at);
    } else if (key == "area") {
      a.area = number(value, at);
    } else if (key == "iscrowd") {
      a.iscrowd = integer(value, at) != 0;
    } else if (key == "bbox") {
      simdjson::dom::array box;
      if (value.get_array().get(box) || box.size() != 4) fail(at, "expected [x, y, w, h]");
      size_t k = 0;
      for (element v : box) a.bbox[k++] = number(v, at);
    } else if (key == "segmentation") {
      simdjson::dom::array list;
      if (!value.get_array().get(list)) {
        for (element p : list) {
          simdjson::dom::array xy;
          if (p.get_array().get(xy)) fail(at, "expected a list of polygons");
          dataset::Polygon polygon;
          for (element v : xy) polygon.push_back(number(v, at));
          a.polygons.push_back(std::move(polygon));
        }
        continue;
      }
      simdjson::dom::array size;
      if (value["size"].get_array().get(size) || size.size() != 2) fail(at, "expected polygons or an RLE");
      const auto h = static_cast<uint32_t>(integer(size.at(0), at + ".size"));
      const auto w = static_cast<uint32_t>(integer(size.at(1), at + ".size"));
      std::string_view counts;
      simdjson::dom::array runs;
      try {
        if (!value["counts"].get_string().get(counts)) {
          a.rle = dataset::fromCompressedString(counts, h, w);
        } else if (!value["counts"].get_array().get(runs)) {
          std::vector<int64_t> c;
          for (element v : runs) c.push_back(integer(v, at + ".counts"));
          a.rle = dataset::rleFromUncompressed(c, h, w);
        } else {
          fail(at + ".counts", "expected a string or a list");
        }
      } catch (const std::invalid_argument& ex) {
        fail(at + ".counts", ex.what());
      }
    } else {
      if (!a.extra.empty()) a.extra += ',';
      a.extra += "\"" + std::string(key) + "\":" + simdjson::to_string(value);
    }
  }
  if (!has_id) fail(place, "no \"id\"");
  return a;
}

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), std::string("cannot be read: ") + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string withSuffix(const fs::path& path, const std::string& suffix) {
  std::string stem = path.filename().string();
  if (stem.size() > 5 && stem.ends_with(".json")) stem.resize(stem.size() - 5);
  return (path.parent_path() / (stem + suffix)).string();
}

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* decisionName(Decision d) {
  switch (d) {
    case Decision::kAccepted:
      return "accepted";
    case Decision::kRejected:
      return "rejected";
    case Decision::kSkipped:
      return "skipped";
  }
  return "?";
}

std::string Annotation::json() const {
  std::ostringstream out;
  {
    io::JsonWriter w(out);
    w.beginObject().key("id").value(id).key("image_id").value(image_id);
    w.key("category_id").value(category_id);
    if (rle) {
      w.key("segmentation").beginObject();
      w.key("size").beginArray().value(rle->h).value(rle->w).endArray();
      w.key("counts").value(dataset::toCompressedString(*rle)).endObject();
    } else if (!polygons.empty()) {
      w.key("segmentation").beginArray();
      for (const auto& p : polygons) {
        w.beginArray();
        for (const double v : p) w.value(v);
        w.endArray();
      }
      w.endArray();
    }
    w.key("area").value(area).key("bbox").beginArray();
    for (const double v : bbox) w.value(v);
    w.endArray().key("iscrowd").value(iscrowd ? 1 : 0).endObject();
  }
  std::string text = out.str();
  if (!extra.empty()) text.insert(text.size() - 1, "," + extra);
  return text;
}

Annotation parseAnnotation(std::string_view json, const std::string& place) {
  simdjson::dom::parser parser;
  element e;
  if (const auto error = parser.parse(simdjson::padded_string(json)).get(e))
    fail(place, simdjson::error_message(error));
  return fromElement(e, place);
}

fs::path journalPathOf(const fs::path& annotations) {
  return withSuffix(annotations, ".changes.jsonl");
}

fs::path AnnotationSet::journalPath() const { return journalPathOf(path_); }
fs::path AnnotationSet::reviewedPath() const { return withSuffix(path_, ".reviewed.json"); }

namespace {

// A member's value as the file writes it (a string view into the file's text).
std::string_view rawValue(simdjson::ondemand::value v, const std::string& place) {
  simdjson::ondemand::json_type type;
  if (v.type().get(type)) fail(place, "not JSON");
  std::string_view raw;
  simdjson::error_code error = simdjson::SUCCESS;
  if (type == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object o;
    error = v.get_object().get(o);
    if (!error) error = o.raw_json().get(raw);
  } else if (type == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array a;
    error = v.get_array().get(a);
    if (!error) error = a.raw_json().get(raw);
  } else {
    raw = v.raw_json_token();
  }
  if (error) fail(place, simdjson::error_message(error));
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t'))
    raw.remove_suffix(1);
  return raw;
}

}  // namespace

AnnotationSet AnnotationSet::open(const fs::path& path) {
  AnnotationSet set;
  set.path_ = path;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path.string()).get(text)) fail(path.string(), "cannot be read");
  // On demand: each annotation's text is taken as the file writes it (kept for the copy);
  // its fields are read from that text.
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (const auto error = parser.iterate(text).get(doc))
    fail(path.string(), simdjson::error_message(error));
  if (const auto error = doc.get_object().get(root)) fail(path.string(), simdjson::error_message(error));
  simdjson::dom::parser fields;
  bool annotations = false;
  for (auto field : root) {
    std::string_view key;
    if (const auto error = field.unescaped_key().get(key)) fail(path.string(), simdjson::error_message(error));
    const std::string name(key);
    simdjson::ondemand::value value;
    if (const auto error = field.value().get(value)) fail(path.string() + ": " + name, simdjson::error_message(error));
    if (name != "annotations") {
      set.members_.emplace_back(name, std::string(rawValue(value, path.string() + ": " + name)));
      continue;
    }
    set.members_.emplace_back(name, std::string());
    annotations = true;
    simdjson::ondemand::array list;
    if (value.get_array().get(list)) fail(path.string() + ": annotations", "expected an array");
    size_t index = 0;
    std::unordered_set<int64_t> ids;
    for (auto item : list) {
      const std::string place = path.string() + ": annotations[" + std::to_string(index++) + "]";
      simdjson::ondemand::object object;
      std::string_view raw;
      if (item.get_object().get(object) || object.raw_json().get(raw)) fail(place, "expected an object");
      while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t'))
        raw.remove_suffix(1);
      simdjson::dom::element e;
      if (const auto error = fields.parse(raw.data(), raw.size()).get(e)) fail(place, simdjson::error_message(error));
      const Annotation a = fromElement(e, place);
      if (!ids.insert(a.id).second) fail(place, "id " + std::to_string(a.id) + " is used twice");
      set.applyAdd(a, std::string(raw));
    }
  }
  if (!annotations) set.members_.emplace_back("annotations", std::string());
  set.rebuild();
  set.replay();
  set.rebuild();
  return set;
}

void AnnotationSet::rebuild() {
  annotations_.clear();
  annotations_.reserve(slots_.size());
  index_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    annotations_.push_back(slots_[i].annotation);
    index_[slots_[i].annotation.id] = i;
  }
}

const Annotation* AnnotationSet::find(int64_t id) const {
  const auto it = index_.find(id);
  return it == index_.end() ? nullptr : &slots_[it->second].annotation;
}

std::vector<const Annotation*> AnnotationSet::ofImage(int64_t image_id) const {
  std::vector<const Annotation*> out;
  for (const Slot& s : slots_)
    if (s.annotation.image_id == image_id) out.push_back(&s.annotation);
  return out;
}

int64_t AnnotationSet::nextId() const {
  int64_t id = 0;
  for (const Slot& s : slots_) id = std::max(id, s.annotation.id);
  return id + 1;
}

bool AnnotationSet::edited(int64_t id) const {
  const auto it = index_.find(id);
  return it != index_.end() && slots_[it->second].raw.empty();
}

void AnnotationSet::applyAdd(const Annotation& a, std::string raw) {
  slots_.push_back({a, std::move(raw)});
}

void AnnotationSet::applyRemove(int64_t id) {
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    if (it->annotation.id == id) {
      slots_.erase(it);
      return;
    }
  }
  throw std::invalid_argument("no annotation " + std::to_string(id));
}

void AnnotationSet::applyUpdate(const Annotation& a) {
  for (Slot& s : slots_) {
    if (s.annotation.id == a.id) {
      s.annotation = a;
      s.raw.clear();
      return;
    }
  }
  throw std::invalid_argument("no annotation " + std::to_string(a.id));
}

void AnnotationSet::journal(const std::string& line) {
  const fs::path file = journalPath();
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail(file.string(), std::string("cannot be written: ") + std::strerror(errno));
  const std::string text = line + "\n";
  // One write of the whole line: a crash leaves it whole or cut short at the end, never
  // interleaved; replay() drops a cut last line.
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  const bool synced = n == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) {
    if (n > 0 && n < static_cast<ssize_t>(text.size())) {
      // A partial line (a full disk): cut it off again so the journal stays whole lines.
      std::error_code ec;
      fs::resize_file(file, fs::file_size(file, ec) - static_cast<uintmax_t>(n), ec);
    }
    fail(file.string(), std::string("cannot be written: ") +
                            std::strerror(n < 0 ? write_errno : ENOSPC));
  }
}

namespace {

std::string opLine(const char* op, const Annotation* before, const Annotation* after) {
  std::string line = "{\"op\":\"" + std::string(op) + "\",\"time\":" + std::to_string(now());
  if (before) line += ",\"before\":" + before->json();
  if (after) line += ",\"after\":" + after->json();
  return line + "}";
}

}  // namespace

Annotation AnnotationSet::add(Annotation a) {
  if (a.id == 0) a.id = nextId();
  if (find(a.id)) throw std::invalid_argument("annotation id " + std::to_string(a.id) + " is taken");
  journal(opLine("add", nullptr, &a));
  applyAdd(a);
  ++changes_;
  rebuild();
  return a;
}

void AnnotationSet::remove(int64_t id) {
  const Annotation* before = find(id);
  if (!before) throw std::invalid_argument("no annotation " + std::to_string(id));
  journal(opLine("delete", before, nullptr));
  applyRemove(id);
  ++changes_;
  rebuild();
}

void AnnotationSet::update(const Annotation& after) {
  const Annotation* before = find(after.id);
  if (!before) throw std::invalid_argument("no annotation " + std::to_string(after.id));
  journal(opLine("update", before, &after));
  applyUpdate(after);
  ++changes_;
  rebuild();
}

void AnnotationSet::decide(const std::string& key, Decision decision) {
  std::ostringstream line;
  {
    io::JsonWriter w(line);
    w.beginObject().key("op").value("decision").key("time").value(now());
    w.key("key").value(key).key("decision").value(decisionName(decision)).endObject();
  }
  journal(line.str());
  decisions_[key] = decision;
}

void AnnotationSet::replay() {
  const fs::path file = journalPath();
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  const std::string text = readAll(file);
  simdjson::dom::parser parser;
  size_t start = 0, number_of_line = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool whole = end != std::string::npos;
    if (!whole) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number_of_line;
    if (line.empty()) continue;
    const std::string place = file.string() + ": line " + std::to_string(number_of_line);
    element e;
    if (parser.parse(simdjson::padded_string(line)).get(e)) {
      if (!whole) {  // the last line, cut short by a crash: only it is lost
        journal_warning_ = place + " was cut short (the program stopped while writing it): "
                                   "that one change is lost";
        break;
      }
      fail(place, "not a JSON object");
    }
    std::string_view op;
    if (e["op"].get_string().get(op)) fail(place, "no \"op\"");
    try {
      if (op == "decision") {
        std::string_view key, name;
        if (e["key"].get_string().get(key) || e["decision"].get_string().get(name)) fail(place, "a decision needs key and decision");
        Decision d = Decision::kSkipped;
        if (name == "accepted") d = Decision::kAccepted;
        else if (name == "rejected") d = Decision::kRejected;
        else if (name != "skipped") fail(place, "unknown decision \"" + std::string(name) + "\"");
        decisions_[std::string(key)] = d;
        continue;
      }
      element after, before;
      if (op == "add" && !e["after"].get(after)) {
        const Annotation a = fromElement(after, place + ": after");
        for (const Slot& slot : slots_)
          if (slot.annotation.id == a.id) throw std::invalid_argument("annotation id " + std::to_string(a.id) + " is taken");
        applyAdd(a);
      } else if (op == "delete" && !e["before"].get(before)) {
        applyRemove(fromElement(before, place + ": before").id);
      } else if (op == "update" && !e["after"].get(after)) {
        applyUpdate(fromElement(after, place + ": after"));
      } else {
        fail(place, "unknown change \"" + std::string(op) + "\"");
      }
    } catch (const std::invalid_argument& ex) {
      fail(place, std::string(ex.what()) + " (the journal is not this file's)");
    }
    ++changes_;
  }
}

std::string AnnotationSet::reviewedJson() const {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, raw] : members_) {
    if (!first) out += ',';
    first = false;
    std::ostringstream name;
    {
      io::JsonWriter w(name);
      w.value(key);
    }
    out += name.str() + ":";
    if (key != "annotations") {
      out += raw;
      continue;
    }
    out += '[';
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (i > 0) out += ',';
      out += slots_[i].raw.empty() ? slots_[i].annotation.json() : slots_[i].raw;
    }
    out += ']';
  }
  return out + "}\n";
}

fs::path AnnotationSet::saveReviewed() const {
  const fs::path out = reviewedPath();
  io::writeFileAtomic(out, reviewedJson());
  return out;
}

}  // namespace mrcnn::review
