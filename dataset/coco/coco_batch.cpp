// Parsing one batch with simdjson On-Demand. On-Demand rather than DOM: it converts only the
// values we read, straight into the arenas, with no tape in between, and it tells where each
// value is, which the error messages need (see docs/BENCHMARKS.md for the measurement).
#include "dataset/coco/coco_batch.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mrcnn::dataset::coco_detail {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

constexpr uint64_t kMaxDimension = std::numeric_limits<uint32_t>::max();

// The key's text as it is in the file. Keys we look for need no escapes; an escaped key is
// compared raw and so simply matches nothing, like any unknown key.
std::string_view rawKey(const od::raw_json_string& key) {
  const char* s = key.raw();
  size_t n = 0;
  while (s[n] != '"') {
    n += s[n] == '\\' ? 2 : 1;
  }
  return {s, n};
}

std::string trimmedToken(od::value& v) {
  std::string_view t = v.raw_json_token();
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' ||
                        t.back() == '\t' || t.back() == ',' || t.back() == ']' || t.back() == '}'))
    t.remove_suffix(1);
  return std::string(t.substr(0, 40));
}

std::string describe(od::value& v) {
  od::json_type type{};
  if (v.type().get(type) != simdjson::SUCCESS) return "malformed JSON";
  switch (type) {
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "the number " + trimmedToken(v);
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::null:
      return "null";
  }
  return "an unknown value";
}

bool isTypeMismatch(error_code e) {
  return e == simdjson::INCORRECT_TYPE || e == simdjson::NUMBER_ERROR ||
         e == simdjson::NUMBER_OUT_OF_RANGE;
}

enum class AnnotationKey : uint8_t {
  kOther,
  kId,
  kImageId,
  kCategoryId,
  kBbox,
  kArea,
  kIscrowd,
  kSegmentation,
  kIgnore
};

AnnotationKey annotationKey(std::string_view k) {
  switch (k.size()) {
    case 2:
      return k == "id" ? AnnotationKey::kId : AnnotationKey::kOther;
    case 4:
      if (k == "bbox") return AnnotationKey::kBbox;
      return k == "area" ? AnnotationKey::kArea : AnnotationKey::kOther;
    case 6:
      return k == "ignore" ? AnnotationKey::kIgnore : AnnotationKey::kOther;
    case 7:
      return k == "iscrowd" ? AnnotationKey::kIscrowd : AnnotationKey::kOther;
    case 8:
      return k == "image_id" ? AnnotationKey::kImageId : AnnotationKey::kOther;
    case 11:
      return k == "category_id" ? AnnotationKey::kCategoryId : AnnotationKey::kOther;
    case 12:
      return k == "segmentation" ? AnnotationKey::kSegmentation : AnnotationKey::kOther;
    default:
      return AnnotationKey::kOther;
  }
}

// Everything about one batch that messages need: where its text sits in the file, which
// element is being read, and the warnings of that element until its ids are known.
class Element {
 public:
  Element(const std::string& file, const RawBatch& batch, od::document& doc)
      : file_(file),
        text_(batch.text.data() + 1),
        end_(batch.text.data() + batch.text.size()),
        file_offset_(batch.file_offset),
        section_(sectionName(batch.section)),
        doc_(doc) {}

  void start(uint64_t index, uint64_t offset) {
    index_ = index;
    start_ = offset;
    pending_.clear();
  }
  uint64_t index() const { return index_; }
  uint64_t startOffset() const { return start_; }
  uint64_t offsetOf(const char* p) const { return file_offset_ + static_cast<uint64_t>(p - text_); }
  std::string path(const std::string& suffix = {}) const {
    return section_ + "[" + std::to_string(index_) + "]" + suffix;
  }

  [[noreturn]] void fail(uint64_t offset, const std::string& suffix,
                         const std::string& reason) const {
    throw CocoError(file_, offset, path(suffix), reason);
  }
  // simdjson could not go on: the text is not JSON.
  [[noreturn]] void syntaxError(error_code e, const std::string& suffix = {}) const {
    const char* at = nullptr;
    if (doc_.current_location().get(at) != simdjson::SUCCESS) at = end_ - 1;
    fail(offsetOf(at), suffix, std::string("malformed JSON (") + simdjson::error_message(e) + ")");
  }
  // `v` is not what the structure needs there.
  [[noreturn]] void typeError(od::value& v, const std::string& suffix, const char* expected,
                              error_code e) const {
    if (!isTypeMismatch(e)) syntaxError(e, suffix);
    const char* at = v.raw_json_token().data();
    od::json_type type{};
    if (e != simdjson::INCORRECT_TYPE && v.type().get(type) == simdjson::SUCCESS &&
        type == od::json_type::number && std::strcmp(expected, "a number") == 0) {
      fail(offsetOf(at), suffix, "number out of range: " + trimmedToken(v));
    }
    fail(offsetOf(at), suffix, std::string("expected ") + expected + ", got " + describe(v));
  }
  // A value read through a simdjson_result (array iteration): the error may be the
  // iteration's own (syntax) or the conversion's (type).
  [[noreturn]] void elementError(simdjson::simdjson_result<od::value>& r, error_code e,
                                 const std::string& suffix, const char* expected) const {
    od::value v;
    if (std::move(r).get(v) != simdjson::SUCCESS) syntaxError(e, suffix);
    typeError(v, suffix, expected, e);
  }

  void warn(CocoWarningCode code, std::string message, const std::string& suffix, uint64_t offset) {
    pending_.push_back(CocoWarning{code, std::move(message), {}, {}, offset, path(suffix)});
  }
  // Hands the element's warnings over, stamped with its ids.
  void flushWarnings(BatchResult& out, size_t max, std::optional<int64_t> image_id,
                     std::optional<int64_t> annotation_id) {
    for (CocoWarning& w : pending_) {
      ++out.warning_count;
      if (out.warnings.size() >= max) continue;
      w.image_id = image_id;
      w.annotation_id = annotation_id;
      out.warnings.push_back(std::move(w));
    }
    pending_.clear();
  }

 private:
  const std::string& file_;
  const char* text_;
  const char* end_;
  uint64_t file_offset_;
  std::string section_;
  od::document& doc_;
  uint64_t index_ = 0;
  uint64_t start_ = 0;
  std::vector<CocoWarning> pending_;
};

int64_t getInt(od::value& v, Element& el, const std::string& suffix) {
  int64_t x = 0;
  if (const error_code e = v.get_int64().get(x)) el.typeError(v, suffix, "an integer", e);
  return x;
}

double getNumber(od::value& v, Element& el, const std::string& suffix) {
  double x = 0;
  if (const error_code e = v.get_double().get(x)) el.typeError(v, suffix, "a number", e);
  return x;
}

std::string_view getString(od::value& v, Element& el, const std::string& suffix) {
  std::string_view s;
  if (const error_code e = v.get_string().get(s)) el.typeError(v, suffix, "a string", e);
  return s;
}

od::array getArray(od::value& v, Element& el, const std::string& suffix) {
  od::array a;
  if (const error_code e = v.get_array().get(a)) el.typeError(v, suffix, "an array", e);
  return a;
}

od::value getValue(simdjson::simdjson_result<od::value>& r, Element& el,
                   const std::string& suffix) {
  od::value v;
  if (const error_code e = std::move(r).get(v)) el.syntaxError(e, suffix);
  return v;
}

// The annotation being read, before it is known to be kept.
struct AnnotationDraft {
  CocoAnnotation a;
  bool has_id = false;
  bool has_image_id = false;
  bool has_category_id = false;
  bool has_area = false;
  int64_t bbox_values = -1;  // -1: no bbox key
  uint64_t bbox_offset = 0;
};

class AnnotationReader {
 public:
  AnnotationReader(Element& el, BatchResult& out, Arenas& arenas)
      : el_(el), out_(out), arenas_(arenas) {}

  void read(od::object object, size_t max_warnings) {
    AnnotationDraft d;
    const size_t polygons_before = out_.polygons.size();
    const size_t rles_before = out_.rles.size();
    for (auto field_result : object) {
      od::field field;
      if (const error_code e = std::move(field_result).get(field)) el_.syntaxError(e);
      od::value& v = field.value();
      switch (annotationKey(rawKey(field.key()))) {
        case AnnotationKey::kId:
          d.a.id = getInt(v, el_, ".id");
          d.has_id = true;
          break;
        case AnnotationKey::kImageId:
          d.a.image_id = getInt(v, el_, ".image_id");
          d.has_image_id = true;
          break;
        case AnnotationKey::kCategoryId:
          d.a.category_id = getInt(v, el_, ".category_id");
          d.has_category_id = true;
          break;
        case AnnotationKey::kArea:
          d.a.area = getNumber(v, el_, ".area");
          d.has_area = true;
          break;
        case AnnotationKey::kIscrowd:
          d.a.iscrowd = getInt(v, el_, ".iscrowd") != 0;
          break;
        case AnnotationKey::kIgnore:
          d.a.ignore = getInt(v, el_, ".ignore") != 0 ? 1 : 0;
          break;
        case AnnotationKey::kBbox:
          readBbox(v, d);
          break;
        case AnnotationKey::kSegmentation:
          readSegmentation(v, d.a);
          break;
        case AnnotationKey::kOther:
          break;  // On-Demand skips it
      }
    }
    const bool keep = check(d);
    el_.flushWarnings(out_, max_warnings,
                      d.has_image_id ? std::optional(d.a.image_id) : std::nullopt,
                      d.has_id ? std::optional(d.a.id) : std::nullopt);
    if (!keep) {
      out_.polygons.resize(polygons_before);
      out_.rles.resize(rles_before);
      return;
    }
    out_.annotations.push_back(d.a);
    out_.annotation_places.push_back(Place{el_.startOffset(), el_.index()});
  }

 private:
  // Records the warnings of a read annotation; false when it cannot be kept.
  bool check(AnnotationDraft& d) {
    const uint64_t at = el_.startOffset();
    bool keep = true;
    if (!d.has_id || !d.has_image_id || !d.has_category_id) {
      const char* missing = !d.has_id ? "id" : !d.has_image_id ? "image_id" : "category_id";
      el_.warn(CocoWarningCode::kMissingField,
               std::string("annotation without ") + missing + ": skipped", "", at);
      keep = false;
    }
    const auto& b = d.a.bbox;
    if (d.bbox_values < 0) {
      el_.warn(CocoWarningCode::kBadBbox, "annotation without bbox: skipped", "", at);
      keep = false;
    } else if (d.bbox_values != 4) {
      el_.warn(CocoWarningCode::kBadBbox,
               "bbox has " + std::to_string(d.bbox_values) + " values, not 4: skipped", ".bbox",
               d.bbox_offset);
      keep = false;
    } else if (!(b[2] >= 0 && b[3] >= 0)) {
      el_.warn(CocoWarningCode::kBadBbox, "bbox has a negative width or height: skipped", ".bbox",
               d.bbox_offset);
      keep = false;
    }
    if (!d.has_area) {
      d.a.area = std::numeric_limits<double>::quiet_NaN();
      el_.warn(CocoWarningCode::kMissingField, "annotation without area", "", at);
    }
    const bool rle = d.a.segmentation == SegmentationKind::kUncompressedRle ||
                     d.a.segmentation == SegmentationKind::kCompressedRle;
    if (d.a.iscrowd && !rle) {
      el_.warn(CocoWarningCode::kCrowdWithoutRle,
               d.a.segmentation == SegmentationKind::kPolygons
                   ? "iscrowd is 1 but the segmentation is polygons, not an RLE"
                   : "iscrowd is 1 but there is no segmentation",
               ".segmentation", at);
    }
    return keep;
  }

  void readBbox(od::value& v, AnnotationDraft& d) {
    d.bbox_offset = el_.offsetOf(v.raw_json_token().data());
    od::array values = getArray(v, el_, ".bbox");
    int64_t n = 0;
    for (auto r : values) {
      double x = 0;
      if (const error_code e = r.get_double().get(x)) {
        el_.elementError(r, e, ".bbox[" + std::to_string(n) + "]", "a number");
      }
      if (n < 4) d.a.bbox[static_cast<size_t>(n)] = x;
      ++n;
    }
    d.bbox_values = n;
  }

  void readSegmentation(od::value& v, CocoAnnotation& a) {
    od::json_type type{};
    if (const error_code e = v.type().get(type)) el_.syntaxError(e, ".segmentation");
    a.segmentation = SegmentationKind::kNone;
    const uint64_t at = el_.offsetOf(v.raw_json_token().data());
    if (type == od::json_type::array) {
      readPolygons(v, a, at);
    } else if (type == od::json_type::object) {
      readRle(v, a, at);
    } else {
      el_.warn(CocoWarningCode::kBadSegmentation,
               "segmentation is " + describe(v) + ", not polygons nor an RLE: ignored",
               ".segmentation", at);
    }
  }

  void readPolygons(od::value& v, CocoAnnotation& a, uint64_t at) {
    od::array list = getArray(v, el_, ".segmentation");
    const size_t begin = out_.polygons.size();
    size_t count = 0;
    const auto where = [&count] { return ".segmentation[" + std::to_string(count) + "]"; };
    for (auto r : list) {
      od::value item;
      if (const error_code e = std::move(r).get(item)) el_.syntaxError(e, where());
      od::array polygon;
      if (item.get_array().get(polygon) != simdjson::SUCCESS) {
        el_.warn(CocoWarningCode::kBadSegmentation,
                 "segmentation[" + std::to_string(count) + "] is " + describe(item) +
                     ", not a polygon (a list of coordinates): segmentation ignored",
                 ".segmentation", at);
        out_.polygons.resize(begin);
        return;
      }
      size_t n = 0;
      for (auto c : polygon) {
        double x = 0;
        if (const error_code e = c.get_double().get(x)) [[unlikely]] {
          el_.elementError(c, e, where() + "[" + std::to_string(n) + "]", "a number");
        }
        arenas_.coordinates.push(x);
        ++n;
      }
      out_.polygons.push_back(arenas_.coordinates.finishRun());
      if (n < 6 || n % 2 != 0) {
        el_.warn(CocoWarningCode::kDegeneratePolygon,
                 "polygon of " + std::to_string(n) + " coordinates (at least 3 points needed)",
                 where(), at);
      }
      ++count;
    }
    if (count == 0) {
      el_.warn(CocoWarningCode::kBadSegmentation, "empty polygon list: segmentation ignored",
               ".segmentation", at);
      return;
    }
    a.segmentation = SegmentationKind::kPolygons;
    a.segment_begin = static_cast<uint32_t>(begin);
    a.segment_count = static_cast<uint32_t>(count);
  }

  void readRle(od::value& v, CocoAnnotation& a, uint64_t at) {
    od::object object;
    if (const error_code e = v.get_object().get(object)) el_.syntaxError(e, ".segmentation");
    int64_t size[2] = {-1, -1};
    int64_t size_values = -1;
    SegmentationKind kind = SegmentationKind::kNone;
    CocoRle rle;
    std::string problem;
    for (auto field_result : object) {
      od::field field;
      if (const error_code e = std::move(field_result).get(field))
        el_.syntaxError(e, ".segmentation");
      const std::string_view key = rawKey(field.key());
      od::value& value = field.value();
      if (key == "size") {
        od::array values = getArray(value, el_, ".segmentation.size");
        size_values = 0;
        for (auto r : values) {
          const std::string where = ".segmentation.size[" + std::to_string(size_values) + "]";
          od::value item = getValue(r, el_, where);
          const int64_t x = getInt(item, el_, where);
          if (size_values < 2) size[size_values] = x;
          ++size_values;
        }
      } else if (key == "counts") {
        od::json_type type{};
        if (const error_code e = value.type().get(type)) el_.syntaxError(e, ".segmentation");
        if (type == od::json_type::string) {
          const std::string_view s = getString(value, el_, ".segmentation.counts");
          for (char c : s)
            arenas_.chars.push(c);
          rle.compressed = std::string_view(arenas_.chars.finishRun().data(), s.size());
          kind = SegmentationKind::kCompressedRle;
        } else {
          rle.counts = readCounts(value, problem);
          kind = SegmentationKind::kUncompressedRle;
        }
      }
    }
    if (kind == SegmentationKind::kNone || size_values < 0) {
      problem = "an RLE needs both size and counts";
    } else if (size_values != 2 || size[0] < 0 || size[1] < 0 ||
               static_cast<uint64_t>(size[0]) > kMaxDimension ||
               static_cast<uint64_t>(size[1]) > kMaxDimension) {
      problem = "RLE size must be [height, width] (two integers >= 0)";
    } else if (problem.empty() && kind == SegmentationKind::kUncompressedRle) {
      uint64_t sum = 0;
      for (uint32_t c : rle.counts)
        sum += c;
      if (sum != static_cast<uint64_t>(size[0]) * static_cast<uint64_t>(size[1])) {
        problem = "RLE counts add up to " + std::to_string(sum) + " pixels, its size is " +
                  std::to_string(size[0]) + "x" + std::to_string(size[1]);
      }
    }
    if (!problem.empty()) {
      el_.warn(CocoWarningCode::kBadSegmentation, problem + ": segmentation ignored",
               ".segmentation", at);
      return;
    }
    rle.height = static_cast<uint32_t>(size[0]);
    rle.width = static_cast<uint32_t>(size[1]);
    a.segmentation = kind;
    a.segment_begin = static_cast<uint32_t>(out_.rles.size());
    a.segment_count = 1;
    out_.rles.push_back(rle);
  }

  std::span<const uint32_t> readCounts(od::value& v, std::string& problem) {
    od::array values = getArray(v, el_, ".segmentation.counts");
    size_t n = 0;
    for (auto r : values) {
      int64_t x = 0;
      if (const error_code e = r.get_int64().get(x)) {
        el_.elementError(r, e, ".segmentation.counts[" + std::to_string(n) + "]", "an integer");
      }
      if ((x < 0 || static_cast<uint64_t>(x) > kMaxDimension) && problem.empty()) {
        problem = "RLE counts[" + std::to_string(n) + "] is " + std::to_string(x);
      }
      arenas_.counts.push(static_cast<uint32_t>(x));
      ++n;
    }
    return arenas_.counts.finishRun();
  }

  Element& el_;
  BatchResult& out_;
  Arenas& arenas_;
};

void readImage(od::object object, Element& el, BatchResult& out, Arenas& arenas,
               size_t max_warnings) {
  CocoImage image;
  bool has_id = false;
  bool has_name = false;
  int64_t width = -1;
  int64_t height = -1;
  for (auto field_result : object) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field)) el.syntaxError(e);
    const std::string_view key = rawKey(field.key());
    od::value& v = field.value();
    if (key == "id") {
      image.id = getInt(v, el, ".id");
      has_id = true;
    } else if (key == "file_name") {
      const std::string_view s = getString(v, el, ".file_name");
      for (char c : s)
        arenas.chars.push(c);
      image.file_name = std::string_view(arenas.chars.finishRun().data(), s.size());
      has_name = true;
    } else if (key == "width") {
      width = getInt(v, el, ".width");
    } else if (key == "height") {
      height = getInt(v, el, ".height");
    }
  }
  std::string problem;
  if (!has_id) {
    problem = "image without id";
  } else if (!has_name) {
    problem = "image without file_name";
  } else if (width <= 0 || height <= 0 || static_cast<uint64_t>(width) > kMaxDimension ||
             static_cast<uint64_t>(height) > kMaxDimension) {
    problem = "image size " + std::to_string(width) + "x" + std::to_string(height) +
              " (width and height must be given, and positive)";
  }
  if (!problem.empty()) {
    el.warn(CocoWarningCode::kBadImage, problem + ": skipped", "", el.startOffset());
  } else {
    image.width = static_cast<uint32_t>(width);
    image.height = static_cast<uint32_t>(height);
    out.images.push_back(image);
    out.image_places.push_back(Place{el.startOffset(), el.index()});
  }
  el.flushWarnings(out, max_warnings, has_id ? std::optional(image.id) : std::nullopt,
                   std::nullopt);
}

void readCategory(od::object object, Element& el, BatchResult& out, size_t max_warnings) {
  CocoCategory category;
  bool has_id = false;
  for (auto field_result : object) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field)) el.syntaxError(e);
    const std::string_view key = rawKey(field.key());
    od::value& v = field.value();
    if (key == "id") {
      category.id = getInt(v, el, ".id");
      has_id = true;
    } else if (key == "name") {
      category.name = getString(v, el, ".name");
    } else if (key == "supercategory") {
      category.supercategory = getString(v, el, ".supercategory");
    }
  }
  if (!has_id) {
    el.warn(CocoWarningCode::kBadCategory, "category without id: skipped", "", el.startOffset());
  } else {
    out.categories.push_back(std::move(category));
    out.category_places.push_back(Place{el.startOffset(), el.index()});
  }
  el.flushWarnings(out, max_warnings, std::nullopt, std::nullopt);
}

// simdjson reports invalid UTF-8 for a whole batch; this finds the first bad byte by bisection
// over prefixes (a prefix is valid until it reaches the bad sequence).
uint64_t firstInvalidUtf8(const RawBatch& batch) {
  size_t lo = 0;
  size_t hi = batch.text.size();
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (simdjson::validate_utf8(batch.text.data(), mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  // A prefix that cuts a valid multi-byte sequence is invalid too; step back to its start.
  size_t at = hi - 1;
  while (at > 0 && (static_cast<unsigned char>(batch.text.data()[at]) & 0xC0) == 0x80)
    --at;
  return batch.file_offset + at - 1;
}

}  // namespace

const char* sectionName(Section section) {
  switch (section) {
    case Section::kImages:
      return "images";
    case Section::kAnnotations:
      return "annotations";
    case Section::kCategories:
      return "categories";
  }
  return "?";
}

void PaddedBuffer::resize(size_t size) {
  if (size > capacity_) {
    const size_t capacity = std::max(size, capacity_ + capacity_ / 2);
    auto data = std::make_unique_for_overwrite<char[]>(capacity + simdjson::SIMDJSON_PADDING);
    if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
    std::memset(data.get() + capacity, 0, simdjson::SIMDJSON_PADDING);
    data_ = std::move(data);
    capacity_ = capacity;
  }
  size_ = size;
}

void BatchResult::clear() {
  images.clear();
  image_places.clear();
  categories.clear();
  category_places.clear();
  annotations.clear();
  annotation_places.clear();
  polygons.clear();
  rles.clear();
  warnings.clear();
  warning_count = 0;
}

void BatchParser::parse(RawBatch& batch, Arenas& arenas, BatchResult& out) {
  out.clear();
  out.sequence = batch.sequence;
  const simdjson::padded_string_view text(batch.text.data(), batch.text.size(),
                                          batch.text.capacity() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  const std::string section = sectionName(batch.section);
  if (const error_code e = parser_.iterate(text).get(doc)) {
    if (e == simdjson::UTF8_ERROR) {
      throw CocoError(file_, firstInvalidUtf8(batch), section, "invalid UTF-8");
    }
    throw CocoError(file_, batch.file_offset, section,
                    std::string("malformed JSON (") + simdjson::error_message(e) + ")");
  }
  Element el(file_, batch, doc);
  od::array elements;
  if (const error_code e = doc.get_array().get(elements)) el.syntaxError(e);
  AnnotationReader annotations(el, out, arenas);
  uint64_t index = batch.first_index;
  for (auto r : elements) {
    el.start(index, batch.file_offset);
    od::value v = getValue(r, el, "");
    el.start(index, el.offsetOf(v.raw_json_token().data()));
    od::object object;
    if (const error_code e = v.get_object().get(object)) el.typeError(v, "", "an object", e);
    switch (batch.section) {
      case Section::kAnnotations:
        annotations.read(object, max_warnings_);
        break;
      case Section::kImages:
        readImage(object, el, out, arenas, max_warnings_);
        break;
      case Section::kCategories:
        readCategory(object, el, out, max_warnings_);
        break;
    }
    ++index;
  }
}

}  // namespace mrcnn::dataset::coco_detail
