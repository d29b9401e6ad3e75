// LabelMe (wkentaro/labelme): one JSON file an image, beside it or naming it by `imagePath`
// (relative to the JSON). Shapes: polygon, rectangle, circle and mask become instances;
// shapes of one label sharing a `group_id` are one instance (a multi-part object); line,
// linestrip, point(s) have no area and are skipped with their index.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <opencv2/core.hpp>
#include <utility>

#include "dataset/import/file_util.h"
#include "dataset/import/imported_dataset.h"
#include "dataset/import/png_indices.h"
#include "dataset/import/parallel.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;

struct FileResult {
  bool is_labelme = false;
  ImportedImage image;
  std::vector<ImportedInstance> instances;
};

std::string shapePlace(size_t index) { return "shape " + std::to_string(index); }

// [[x, y], ...] into x0 y0 x1 y1 ...; nullopt when it is anything else.
std::optional<Polygon> readPoints(element points) {
  simdjson::dom::array array;
  if (points.get_array().get(array)) return std::nullopt;
  Polygon xy;
  xy.reserve(array.size() * 2);
  for (element point : array) {
    simdjson::dom::array pair;
    if (point.get_array().get(pair) || pair.size() != 2) return std::nullopt;
    for (element v : pair) {
      double d = 0;
      if (v.get_double().get(d) || !std::isfinite(d)) return std::nullopt;
      xy.push_back(d);
    }
  }
  return xy;
}

// A circle (centre, a point on the rim) as a polygon whose edges stray from the rim by at
// most a quarter pixel: the sagitta r (1 - cos(pi / n)) <= 0.25.
Polygon circlePolygon(double cx, double cy, double px, double py) {
  const double r = std::hypot(px - cx, py - cy);
  int n = 12;
  if (r > 0.25) {
    n = std::max(n, static_cast<int>(std::ceil(std::numbers::pi / std::acos(1.0 - 0.25 / r))));
  }
  Polygon xy;
  xy.reserve(static_cast<size_t>(n) * 2);
  for (int k = 0; k < n; ++k) {
    const double a = 2 * std::numbers::pi * k / n;
    xy.push_back(cx + r * std::cos(a));
    xy.push_back(cy + r * std::sin(a));
  }
  return xy;
}

// A `mask` shape: a PNG (base64) of the region whose top-left corner is the first point.
std::optional<cv::Mat> readMaskShape(element shape, const Polygon& corners, uint32_t width,
                                     uint32_t height, std::string* why) {
  std::string_view encoded;
  if (shape["mask"].get_string().get(encoded)) {
    *why = "a mask shape without a \"mask\" string";
    return std::nullopt;
  }
  const std::optional<std::string> png = decodeBase64(encoded);
  if (!png) {
    *why = "its \"mask\" is not base64";
    return std::nullopt;
  }
  const PngIndices decoded = decodePngSamples(
      {reinterpret_cast<const uint8_t*>(png->data()), png->size()});
  if (!decoded.ok()) {
    *why = "its \"mask\" is not a PNG that decodes: " + decoded.problem;
    return std::nullopt;
  }
  const cv::Mat& region = decoded.values;
  if (width == 0 || height == 0) {
    *why = "a mask shape in a file without imageWidth/imageHeight";
    return std::nullopt;
  }
  cv::Mat full = cv::Mat::zeros(static_cast<int>(height), static_cast<int>(width), CV_8UC1);
  const int x0 = static_cast<int>(std::floor(corners[0]));
  const int y0 = static_cast<int>(std::floor(corners[1]));
  const cv::Rect target = cv::Rect(x0, y0, region.cols, region.rows) & cv::Rect(0, 0, full.cols, full.rows);
  if (target.area() > 0) {
    const cv::Rect source(target.x - x0, target.y - y0, target.width, target.height);
    cv::Mat dst = full(target);
    dst.setTo(1, region(source) != 0);
  }
  return full;
}

uint32_t readSize(element doc, const char* key) {
  int64_t v = 0;
  if (doc[key].get_int64().get(v) || v <= 0 || v > UINT32_MAX) return 0;
  return static_cast<uint32_t>(v);
}

FileResult readFile(const fs::path& json_path, simdjson::dom::parser& parser, ProblemLog& log) {
  FileResult result;
  const std::string file = display(json_path);
  // With simdjson's padding spare: the parser reads the string where it is.
  const std::string text = readFileOrThrow(json_path, simdjson::SIMDJSON_PADDING);
  element doc;
  if (parser.parse(text).get(doc)) {
    const std::optional<std::string> where = jsonSyntaxError(text);
    const std::string place = where ? where->substr(0, where->find(": ")) : "";
    const std::string why = where ? where->substr(where->find(": ") + 2) : "not JSON";
    throw ImportError(file, place, "malformed JSON: " + why + "; fix or remove the file");
  }
  simdjson::dom::array shapes;
  if (doc["shapes"].get_array().get(shapes)) {
    log.skip("not_labelme", file, "", "a JSON file without a \"shapes\" array: not a LabelMe file, ignored");
    return result;
  }
  result.is_labelme = true;
  ImportedImage& image = result.image;
  image.source = file;
  image.width = readSize(doc, "imageWidth");
  image.height = readSize(doc, "imageHeight");
  std::string_view image_path;
  if (doc["imagePath"].get_string().get(image_path) || image_path.empty()) {
    log.warn("no_image_path", file, "imagePath", "no imagePath: the image is taken as <json name>.jpg");
    image.path = json_path.parent_path() / (json_path.stem().string() + ".jpg");
  } else {
    // LabelMe on Windows writes backslashes.
    std::string p(image_path);
    std::replace(p.begin(), p.end(), '\\', '/');
    image.path = (json_path.parent_path() / p).lexically_normal();
  }
  std::string_view image_data;
  if (!doc["imageData"].get_string().get(image_data) && !image_data.empty() &&
      !fs::exists(image.path)) {
    std::optional<std::string> bytes = decodeBase64(image_data);
    if (bytes) {
      image.embedded = std::move(*bytes);
    } else {
      log.warn("bad_image_data", file, "imageData", "imageData is not base64: not used");
    }
  }

  // Instances in the order of their first shape; a (label, group_id) pair names a group.
  std::map<std::pair<std::string, int64_t>, size_t> groups;
  size_t index = 0;
  for (element shape : shapes) {
    const size_t shape_index = index++;
    const std::string place = shapePlace(shape_index);
    std::string_view label;
    if (shape["label"].get_string().get(label)) {
      log.skip("bad_shape", file, place, "a shape without a \"label\" string: skipped");
      continue;
    }
    std::string_view type;
    if (shape["shape_type"].get_string().get(type)) type = "polygon";  // LabelMe's default for null
    if (type == "line" || type == "linestrip" || type == "point" || type == "points") {
      log.skip("shape_type_skipped", file, place,
               "a " + std::string(type) + " shape (label \"" + std::string(label) +
                   "\") has no area: not an instance");
      continue;
    }
    if (type != "polygon" && type != "rectangle" && type != "circle" && type != "mask") {
      log.skip("shape_type_skipped", file, place,
               "unknown shape_type \"" + std::string(type) + "\": skipped");
      continue;
    }
    std::optional<Polygon> points = readPoints(shape["points"]);
    if (!points) {
      log.skip("bad_shape", file, place, "\"points\" is not a list of [x, y] pairs: skipped");
      continue;
    }
    if (type != "polygon" && points->size() != 4) {
      log.skip("bad_shape", file, place,
               "a " + std::string(type) + " needs exactly 2 points, it has " +
                   std::to_string(points->size() / 2) + ": skipped");
      continue;
    }
    std::optional<cv::Mat> mask;
    Polygon polygon;
    const Polygon& p = *points;
    if (type == "polygon") {
      polygon = std::move(*points);
    } else if (type == "rectangle") {
      const double x1 = std::min(p[0], p[2]), x2 = std::max(p[0], p[2]);
      const double y1 = std::min(p[1], p[3]), y2 = std::max(p[1], p[3]);
      polygon = {x1, y1, x2, y1, x2, y2, x1, y2};
    } else if (type == "circle") {
      polygon = circlePolygon(p[0], p[1], p[2], p[3]);
    } else {
      std::string why;
      mask = readMaskShape(shape, p, image.width, image.height, &why);
      if (!mask) {
        log.skip("bad_shape", file, place, why + ": skipped");
        continue;
      }
    }

    int64_t group_id = 0;
    const bool grouped = !shape["group_id"].get_int64().get(group_id);
    size_t target = result.instances.size();
    if (grouped) {
      const auto [it, added] = groups.try_emplace({std::string(label), group_id}, target);
      target = it->second;
    }
    if (target == result.instances.size()) {
      ImportedInstance instance;
      instance.label = std::string(label);
      instance.file = file;
      instance.place = grouped ? place + " (group_id " + std::to_string(group_id) + ")" : place;
      simdjson::dom::object flags;
      if (!shape["flags"].get_object().get(flags)) {
        for (auto [key, value] : flags) {
          bool b = false;
          if (!value.get_bool().get(b)) {
            instance.attributes.push_back({std::string(key), b ? "true" : "false", Attribute::Kind::kBool});
          }
        }
      }
      std::string_view description;
      if (!shape["description"].get_string().get(description) && !description.empty()) {
        instance.attributes.push_back({"description", std::string(description), Attribute::Kind::kString});
      }
      result.instances.push_back(std::move(instance));
    }
    ImportedInstance& instance = result.instances[target];
    if (mask) {
      const Rle rle = encodeMask(*mask);
      if (instance.mask) {
        const Rle both[2] = {*instance.mask, rle};
        instance.mask = merge(both);
      } else {
        instance.mask = rle;
      }
    } else {
      instance.polygons.push_back(std::move(polygon));
    }
  }
  return result;
}

// The order of the output does not follow the disk's: the files sorted by path.
std::vector<std::string> jsonFiles(const fs::path& input) {
  if (fs::is_regular_file(input)) return {input.string()};
  return filesUnder(input, ".json");
}

}  // namespace

ImportedDataset readLabelMe(const ReadContext& context) {
  const std::vector<std::string> files = jsonFiles(context.input);
  if (files.empty()) {
    throw ImportError(display(context.input), "", "no LabelMe .json files in this folder");
  }
  std::vector<FileResult> results(files.size());
  parallelFor(
      files.size(), context.threads,
      [&](size_t i) {
        // One parser a thread: it keeps its buffers from file to file.
        static thread_local simdjson::dom::parser parser;
        results[i] = readFile(files[i], parser, *context.log);
      },
      [&](size_t done) {
        context.report("read " + std::to_string(done) + " of " + std::to_string(files.size()) +
                       " LabelMe files");
      });
  ImportedDataset dataset;
  size_t instances = 0;
  for (const FileResult& r : results) instances += r.instances.size();
  dataset.images.reserve(results.size());
  dataset.instances.reserve(instances);
  for (FileResult& r : results) {
    if (!r.is_labelme) continue;
    const auto image_index = static_cast<uint32_t>(dataset.images.size());
    dataset.images.push_back(std::move(r.image));
    for (ImportedInstance& instance : r.instances) {
      instance.image = image_index;
      dataset.instances.push_back(std::move(instance));
    }
  }
  if (dataset.images.empty()) {
    throw ImportError(display(context.input), "", "none of the .json files is a LabelMe file");
  }
  return dataset;
}

}  // namespace mrcnn::dataset::import
