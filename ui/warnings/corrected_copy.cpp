#include "ui/warnings/corrected_copy.h"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>

namespace mrcnn::ui {

namespace {

// Finds the extent of JSON values without building them.
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw CorrectionError(name_ + ": byte " + std::to_string(at) + ": " + what);
  }

  size_t ws(size_t p) const {
    while (p < text_.size() &&
           (text_[p] == ' ' || text_[p] == '\n' || text_[p] == '\r' || text_[p] == '\t'))
      ++p;
    return p;
  }

  void expect(size_t p, char c) const {
    if (p >= text_.size()) fail(p, std::string("expected '") + c + "', got the end of the file");
    if (text_[p] != c) fail(p, std::string("expected '") + c + "', got '" + text_[p] + "'");
  }

  // p at '"': one past the closing quote.
  size_t string(size_t p) const {
    expect(p, '"');
    for (size_t i = p + 1; i < text_.size(); ++i) {
      if (text_[i] == '\\') {
        ++i;
      } else if (text_[i] == '"') {
        return i + 1;
      }
    }
    fail(p, "unterminated string");
  }

  // p at a value's first byte: one past its last.
  size_t value(size_t p) const {
    if (p >= text_.size()) fail(p, "expected a value, got the end of the file");
    const char c = text_[p];
    if (c == '"') return string(p);
    if (c == '{' || c == '[') {
      std::string stack;
      for (size_t i = p; i < text_.size(); ++i) {
        const char d = text_[i];
        if (d == '"') {
          i = string(i) - 1;
        } else if (d == '{' || d == '[') {
          stack.push_back(d == '{' ? '}' : ']');
        } else if (d == '}' || d == ']') {
          if (stack.empty() || stack.back() != d) fail(i, std::string("unexpected '") + d + "'");
          stack.pop_back();
          if (stack.empty()) return i + 1;
        }
      }
      fail(p, "unterminated " + std::string(c == '{' ? "object" : "array"));
    }
    size_t i = p;
    while (i < text_.size() &&
           std::string_view(",}] \t\r\n").find(text_[i]) == std::string_view::npos)
      ++i;
    if (i == p) fail(p, std::string("expected a value, got '") + c + "'");
    return i;
  }

  // The members of the object at `open`; returns one past its '}'.
  size_t members(
      size_t open,
      const std::function<void(std::string_view key, size_t begin, size_t end)>& f) const {
    expect(open, '{');
    size_t p = ws(open + 1);
    if (p < text_.size() && text_[p] == '}') return p + 1;
    while (true) {
      const size_t key_end = string(p);
      const std::string_view key = text_.substr(p + 1, key_end - p - 2);
      p = ws(key_end);
      expect(p, ':');
      p = ws(p + 1);
      const size_t end = value(p);
      f(key, p, end);
      p = ws(end);
      if (p < text_.size() && text_[p] == ',') {
        p = ws(p + 1);
        continue;
      }
      expect(p, '}');
      return p + 1;
    }
  }

  // The elements of the array at `open`; returns one past its ']'.
  size_t elements(size_t open, const std::function<void(size_t begin, size_t end)>& f) const {
    expect(open, '[');
    size_t p = ws(open + 1);
    if (p < text_.size() && text_[p] == ']') return p + 1;
    while (true) {
      const size_t end = value(p);
      f(p, end);
      p = ws(end);
      if (p < text_.size() && text_[p] == ',') {
        p = ws(p + 1);
        continue;
      }
      expect(p, ']');
      return p + 1;
    }
  }

  std::optional<double> number(size_t begin, size_t end) const {
    double v = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + begin, text_.data() + end, v);
    if (ec != std::errc() || ptr != text_.data() + end) return std::nullopt;
    return v;
  }

  std::optional<int64_t> integer(size_t begin, size_t end) const {
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + begin, text_.data() + end, v);
    if (ec == std::errc() && ptr == text_.data() + end) return v;
    // 12.0 is an integer id too (Python's json writes floats that way).
    const auto d = number(begin, end);
    if (d && *d == static_cast<double>(static_cast<int64_t>(*d))) return static_cast<int64_t>(*d);
    return std::nullopt;
  }

  std::string_view text() const { return text_; }

 private:
  std::string_view text_;
  const std::string& name_;
};

struct Element {
  size_t begin = 0, end = 0;
  std::optional<int64_t> id;
  std::optional<int64_t> image_id;
  size_t bbox_begin = 0, bbox_end = 0;  // the bbox array's extent, 0 when absent
  std::vector<std::pair<size_t, size_t>> bbox_tokens;
  std::vector<double> bbox;
};

struct Scan {
  std::unordered_map<int64_t, std::pair<double, double>> image_sizes;
  bool has_annotations = false;
  std::vector<Element> annotations;
};

Scan scan(const Scanner& s) {
  Scan out;
  const std::string_view text = s.text();
  const size_t start = s.ws(0);
  bool seen_images = false;
  const size_t end = s.members(start, [&](std::string_view key, size_t begin, size_t) {
    // The first of repeated top-level keys counts, as the COCO reader has it.
    if (key == "images" && !seen_images && text[begin] == '[') {
      seen_images = true;
      s.elements(begin, [&](size_t b, size_t) {
        if (text[b] != '{') return;
        std::optional<int64_t> id;
        std::optional<double> w, h;
        s.members(b, [&](std::string_view k, size_t vb, size_t ve) {
          if (k == "id") id = s.integer(vb, ve);
          if (k == "width") w = s.number(vb, ve);
          if (k == "height") h = s.number(vb, ve);
        });
        if (id && w && h) out.image_sizes.emplace(*id, std::make_pair(*w, *h));
      });
    } else if (key == "annotations" && !out.has_annotations && text[begin] == '[') {
      out.has_annotations = true;
      s.elements(begin, [&](size_t b, size_t e) {
        Element element;
        element.begin = b;
        element.end = e;
        if (text[b] == '{') {
          s.members(b, [&](std::string_view k, size_t vb, size_t ve) {
            if (k == "id" && !element.id) element.id = s.integer(vb, ve);
            if (k == "image_id" && !element.image_id) element.image_id = s.integer(vb, ve);
            if (k == "bbox" && element.bbox_end == 0 && text[vb] == '[') {
              element.bbox_begin = vb;
              element.bbox_end = ve;
              s.elements(vb, [&](size_t nb, size_t ne) {
                element.bbox_tokens.emplace_back(nb, ne);
                element.bbox.push_back(s.number(nb, ne).value_or(std::nan("")));
              });
            }
          });
        }
        out.annotations.push_back(std::move(element));
      });
    }
  });
  if (s.ws(end) != text.size()) s.fail(s.ws(end), "unexpected text after the top-level object");
  return out;
}

// Shortest text that reads back as v; "12.0" rather than "12" when the original was a float.
std::string formatNumber(double v, std::string_view original) {
  char buffer[64];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  std::string s(buffer, ptr);
  const bool was_float = original.find_first_of(".eE") != std::string_view::npos;
  if (was_float && s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

RawIndex indexAnnotations(std::string_view json, const std::string& name) {
  const Scanner s(json, name);
  Scan found = scan(s);
  RawIndex index;
  index.image_sizes = std::move(found.image_sizes);
  for (const Element& e : found.annotations) {
    if (!e.id) continue;
    RawAnnotation raw;
    raw.begin = e.begin;
    raw.end = e.end;
    raw.image_id = e.image_id.value_or(0);
    if (e.bbox.size() == 4)
      raw.bbox = std::array<double, 4>{e.bbox[0], e.bbox[1], e.bbox[2], e.bbox[3]};
    index.annotations.emplace(*e.id, raw);
  }
  return index;
}

std::string correctAnnotations(std::string_view json, const AnnotationCorrections& corrections,
                               const std::string& name, CorrectionSummary* summary) {
  const Scanner s(json, name);
  const Scan found = scan(s);
  CorrectionSummary local;
  CorrectionSummary& sum = summary ? *summary : local;
  sum = {};
  std::set<int64_t> seen;
  std::string out;
  out.reserve(json.size());
  if (found.annotations.empty()) {
    out.assign(json);
  } else {
    // Up to the first element, then the kept elements, each after the separator that preceded
    // it in the file (it holds the comma), then everything after the last element.
    out.append(json.substr(0, found.annotations.front().begin));
    bool first_kept = true;
    for (size_t i = 0; i < found.annotations.size(); ++i) {
      const Element& e = found.annotations[i];
      if (e.id) seen.insert(*e.id);
      if (e.id && corrections.drop.contains(*e.id)) {
        sum.dropped.push_back(*e.id);
        continue;
      }
      if (!first_kept) {
        const size_t previous_end = found.annotations[i - 1].end;
        out.append(json.substr(previous_end, e.begin - previous_end));
      }
      first_kept = false;
      std::string element(json.substr(e.begin, e.end - e.begin));
      if (e.id && corrections.clip.contains(*e.id)) {
        const auto size =
            e.image_id ? found.image_sizes.find(*e.image_id) : found.image_sizes.end();
        if (e.bbox.size() != 4 || size == found.image_sizes.end() ||
            std::any_of(e.bbox.begin(), e.bbox.end(), [](double v) { return std::isnan(v); })) {
          sum.not_found.push_back(*e.id);
        } else {
          const auto [width, height] = size->second;
          const double x0 = std::clamp(e.bbox[0], 0.0, width);
          const double y0 = std::clamp(e.bbox[1], 0.0, height);
          const double x1 = std::clamp(e.bbox[0] + e.bbox[2], 0.0, width);
          const double y1 = std::clamp(e.bbox[1] + e.bbox[3], 0.0, height);
          const double clipped[4] = {x0, y0, std::max(0.0, x1 - x0), std::max(0.0, y1 - y0)};
          bool changed = false;
          // Replace the changed numbers from the last to the first: offsets stay valid.
          for (int k = 3; k >= 0; --k) {
            const auto [tb, te] = e.bbox_tokens[static_cast<size_t>(k)];
            if (clipped[k] == e.bbox[static_cast<size_t>(k)]) continue;
            changed = true;
            element.replace(tb - e.begin, te - tb,
                            formatNumber(clipped[k], json.substr(tb, te - tb)));
          }
          (changed ? sum.clipped : sum.already_inside).push_back(*e.id);
          if (changed && (clipped[2] <= 0 || clipped[3] <= 0))
            sum.empty_after_clip.push_back(*e.id);
        }
      }
      out.append(element);
    }
    out.append(json.substr(found.annotations.back().end));
  }
  for (const std::set<int64_t>* ids : {&corrections.drop, &corrections.clip})
    for (int64_t id : *ids)
      if (!seen.contains(id)) sum.not_found.push_back(id);
  std::sort(sum.not_found.begin(), sum.not_found.end());
  sum.not_found.erase(std::unique(sum.not_found.begin(), sum.not_found.end()), sum.not_found.end());
  return out;
}

CorrectionSummary exportCorrectedCopy(const QString& input, const QString& output,
                                      const AnnotationCorrections& corrections) {
  const std::string in_name = input.toStdString();
  if (corrections.empty())
    throw CorrectionError("nothing to correct: choose annotations to drop or boxes to clip");
  if (output.isEmpty()) throw CorrectionError("no output file given");
  const QFileInfo in_info(input), out_info(output);
  std::error_code ec;
  if (in_info.absoluteFilePath() == out_info.absoluteFilePath() ||
      (out_info.exists() && (in_info.canonicalFilePath() == out_info.canonicalFilePath() ||
                             std::filesystem::equivalent(in_name, output.toStdString(), ec))))
    throw CorrectionError("refusing to write over the original " + in_name +
                          ": choose another file for the corrected copy");
  QFile file(input);
  if (!file.open(QIODevice::ReadOnly))
    throw CorrectionError(in_name + ": cannot open: " + file.errorString().toStdString());
  const QByteArray bytes = file.readAll();
  CorrectionSummary summary;
  const std::string text =
      correctAnnotations(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())),
                         corrections, in_name, &summary);
  QSaveFile save(output);
  if (!save.open(QIODevice::WriteOnly) ||
      save.write(text.data(), static_cast<qint64>(text.size())) !=
          static_cast<qint64>(text.size()) ||
      !save.commit())
    throw CorrectionError(output.toStdString() +
                          ": cannot write: " + save.errorString().toStdString());
  return summary;
}

}  // namespace mrcnn::ui
