#include "dataset/shapes/shapes_generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <numbers>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include "io/json_writer.h"
#include "dataset/mask/rle.h"
#include "dataset/shapes/shapes_internal.h"
#include "io/atomic_file.h"

namespace mrcnn::dataset {
namespace {

namespace fs = std::filesystem;
using namespace shapes_detail;

// Bump when the output for the same options changes: old stamps then no longer match.
constexpr int kGeneratorVersion = 1;
constexpr int kJpegQuality = 90;
constexpr double kRleShare = 0.07;      // plus shapes with holes or slivers: ~10% RLE in all
constexpr double kMinPolygonIou = 0.8;  // worse polygons are stored as RLE instead

// ---------------------------------------------------------------------------------------------
// Annotations.

enum class Encoding { kPolygons, kRle, kCrowdRle };

struct Annotation {
  int category_id = 0;
  Encoding encoding = Encoding::kPolygons;
  std::vector<Polygon> polygons;
  Rle rle;  // the mask the segmentation decodes to (for polygons: pycocotools' rasterisation)
};

bool hasHoles(const std::vector<cv::Vec4i>& hierarchy) {
  return std::any_of(hierarchy.begin(), hierarchy.end(),
                     [](const cv::Vec4i& h) { return h[3] >= 0; });
}

// The outer contours of the visible region, one polygon per connected piece. Contours are
// traced on a 2x upsampled mask, so that their vertices sit a quarter pixel inside the pixel
// boundary: pycocotools' rasteriser then gives back the pixels themselves, where contours
// through pixel centres would lose a row and a column. Returns nothing when the region has
// holes, which a COCO polygon cannot express.
std::vector<Polygon> visiblePolygons(const cv::Mat& visible) {
  cv::Mat up;
  cv::resize(visible, up, visible.size() * 2, 0, 0, cv::INTER_NEAREST);
  std::vector<std::vector<cv::Point>> contours;
  std::vector<cv::Vec4i> hierarchy;
  cv::findContours(up, contours, hierarchy, cv::RETR_CCOMP, cv::CHAIN_APPROX_SIMPLE);
  if (hasHoles(hierarchy)) return {};
  std::vector<Polygon> polygons;
  for (const auto& contour : contours) {
    std::vector<cv::Point> simple;
    cv::approxPolyDP(contour, simple, /*epsilon=*/0.75, /*closed=*/true);
    if (simple.size() < 3) continue;
    Polygon p;
    for (const cv::Point& q : simple) {
      p.push_back((q.x + 0.5) / 2);
      p.push_back((q.y + 0.5) / 2);
    }
    polygons.push_back(std::move(p));
  }
  return polygons;
}

Annotation annotate(const ShapesInstance& instance, Rng& rng) {
  Annotation a;
  a.category_id = instance.category_id;
  const Rle exact = encodeMask(instance.visible);
  if (instance.crowd) {
    a.encoding = Encoding::kCrowdRle;
    a.rle = exact;
    return a;
  }
  a.encoding = Encoding::kRle;
  a.rle = exact;
  if (rng.chance(kRleShare)) return a;
  std::vector<Polygon> polygons = visiblePolygons(instance.visible);
  if (polygons.empty()) return a;
  const auto h = static_cast<uint32_t>(instance.visible.rows);
  const auto w = static_cast<uint32_t>(instance.visible.cols);
  Rle drawn = rleFromPolygons(polygons, h, w);
  const std::array<Rle, 2> both = {drawn, exact};
  const auto common = static_cast<double>(area(merge(both, /*intersect=*/true)));
  const auto unite = static_cast<double>(area(merge(both)));
  // Thin slivers rasterise to little or nothing: keep those exact.
  if (area(drawn) < kMinVisibleArea || common < kMinPolygonIou * unite) return a;
  a.encoding = Encoding::kPolygons;
  a.polygons = std::move(polygons);
  a.rle = std::move(drawn);
  return a;
}

void writeSegmentation(io::JsonWriter& json, const Annotation& a) {
  switch (a.encoding) {
    case Encoding::kPolygons:
      json.beginArray();
      for (const Polygon& p : a.polygons) {
        json.beginArray();
        for (double v : p)
          json.value(v);
        json.endArray();
      }
      json.endArray();
      break;
    case Encoding::kRle:
    case Encoding::kCrowdRle:
      json.beginObject().key("size").beginArray().value(a.rle.h).value(a.rle.w).endArray();
      json.key("counts");
      if (a.encoding == Encoding::kRle) {
        json.value(toCompressedString(a.rle));
      } else {
        json.beginArray();  // crowd regions: uncompressed, as in COCO's own files
        for (uint32_t c : a.rle.counts)
          json.value(c);
        json.endArray();
      }
      json.endObject();
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Files.

void makeDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create directory " + dir.string() + ": " + ec.message());
}

std::string imageFileName(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "%06d.jpg", index + 1);
  return name;
}

// Removes images of an earlier, larger run and temporaries of an interrupted one.
void removeStaleFiles(const fs::path& dir, int count) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool tmp = name.ends_with(".jpg.tmp");
    const bool ours =
        name.size() == 10 && name.ends_with(".jpg") &&
        std::all_of(name.begin(), name.begin() + 6, [](char c) { return c >= '0' && c <= '9'; });
    if (tmp || (ours && std::stoi(name.substr(0, 6)) > count)) fs::remove(entry.path(), ec);
  }
}

std::string stampOptions(const ShapesOptions& o) {
  std::ostringstream s;
  s << "mrcnn-shapes " << kGeneratorVersion << "\ntrain_images " << o.train_images
    << "\nval_images " << o.val_images << "\nmin_side " << o.min_side << "\nmax_side " << o.max_side
    << "\nmax_shapes " << o.max_shapes << "\ncategories " << o.categories << "\nclutter "
    << o.clutter << "\nmin_shape_size " << o.min_shape_size << "\nseed " << o.seed << "\n";
  return s.str();
}

std::string stampSummary(const ShapesSummary& summary) {
  std::ostringstream s;
  for (const auto* split : {&summary.train, &summary.val}) {
    s << "summary " << split->images << ' ' << split->annotations << ' ' << split->polygons << ' '
      << split->rles << ' ' << split->crowds << "\n";
  }
  return s.str();
}

fs::path stampPath(const fs::path& root) {
  return root / "shapes.stamp";
}

// The summary recorded in an up-to-date stamp; nothing when files must be (re)generated.
std::optional<ShapesSummary> upToDate(const ShapesOptions& options) {
  std::ifstream in(stampPath(options.root), std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string expected = stampOptions(options);
  if (!text.starts_with(expected)) return std::nullopt;
  ShapesSummary summary;
  std::istringstream rest(text.substr(expected.size()));
  for (ShapesSplitSummary* split : {&summary.train, &summary.val}) {
    std::string word;
    rest >> word >> split->images >> split->annotations >> split->polygons >> split->rles >>
        split->crowds;
    if (!rest || word != "summary") return std::nullopt;
  }
  for (const auto& [split, count] :
       {std::pair<std::string_view, int>{"train", options.train_images},
        {"val", options.val_images}}) {
    if (!fs::is_regular_file(shapesAnnotationFile(options.root, split))) return std::nullopt;
    for (int i = 0; i < count; ++i) {
      if (!fs::is_regular_file(shapesImageDir(options.root, split) / imageFileName(i))) {
        return std::nullopt;
      }
    }
  }
  return summary;
}

void validate(const ShapesOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("shapes dataset options: " + what);
  };
  if (o.root.empty()) fail("root is empty");
  if (o.train_images < 0 || o.val_images < 0) fail("image counts must not be negative");
  if (o.min_side < 32 || o.max_side < o.min_side || o.max_side > 8192) {
    fail("need 32 <= min_side <= max_side <= 8192, got " + std::to_string(o.min_side) + ", " +
         std::to_string(o.max_side));
  }
  if (o.max_shapes < 1 || o.max_shapes > 100) fail("max_shapes must be in 1..100");
  if (o.categories < 1 || o.categories > static_cast<int>(shapesCategories().size()))
    fail("categories must be in 1.." + std::to_string(shapesCategories().size()));
  if (!(o.clutter >= 0 && o.clutter <= 10)) fail("clutter must be in 0..10");
  if (o.min_shape_size < 4 || o.min_shape_size > o.min_side / 2) {
    fail("min_shape_size must be in 4..min_side/2 (" + std::to_string(o.min_side / 2) + "), got " +
         std::to_string(o.min_shape_size));
  }
}

ShapesSplitSummary generateSplit(const ShapesOptions& options, std::string_view split, int count) {
  const fs::path imageDir = shapesImageDir(options.root, split);
  makeDirectories(imageDir);
  makeDirectories(shapesAnnotationFile(options.root, split).parent_path());

  std::ostringstream text;
  io::JsonWriter json(text);
  json.beginObject();
  json.key("info").beginObject();
  json.key("description").value("mrcnn-workbench synthetic shapes");
  json.key("version").value(std::to_string(kGeneratorVersion));
  json.key("year").value(2026);
  json.key("contributor").value("mrcnn-workbench shapes generator");
  json.key("seed").value(options.seed);
  json.endObject();
  json.key("licenses").beginArray().beginObject();
  json.key("id").value(1).key("name").value("CC0 1.0");
  json.key("url").value("https://creativecommons.org/publicdomain/zero/1.0/");
  json.endObject().endArray();
  json.key("categories").beginArray();
  for (size_t i = 0; i < static_cast<size_t>(options.categories); ++i) {
    json.beginObject().key("id").value(i + 1).key("name").value(shapesCategories()[i]);
    json.key("supercategory").value("shape").endObject();
  }
  json.endArray();

  ShapesSplitSummary summary;
  std::vector<std::pair<int, Annotation>> annotations;  // (image id, annotation)
  json.key("images").beginArray();
  for (int i = 0; i < count; ++i) {
    const ShapesScene scene = renderShapesScene(options, split, i);
    std::vector<uint8_t> jpeg;
    const fs::path file = imageDir / imageFileName(i);
    if (!cv::imencode(".jpg", scene.image, jpeg, {cv::IMWRITE_JPEG_QUALITY, kJpegQuality})) {
      throw std::runtime_error("cannot encode " + file.string());
    }
    io::writeFileAtomic(file, {reinterpret_cast<const char*>(jpeg.data()), jpeg.size()});
    json.beginObject().key("id").value(i + 1).key("file_name").value(imageFileName(i));
    json.key("width").value(scene.image.cols).key("height").value(scene.image.rows);
    json.key("license").value(1).endObject();

    Rng rng(streamSeed(options.seed, split, i, kEncodeStream));
    for (const ShapesInstance& instance : scene.instances) {
      annotations.emplace_back(i + 1, annotate(instance, rng));
    }
    ++summary.images;
  }
  json.endArray();

  json.key("annotations").beginArray();
  for (size_t k = 0; k < annotations.size(); ++k) {
    const auto& [imageId, a] = annotations[k];
    json.beginObject().key("id").value(k + 1).key("image_id").value(imageId);
    json.key("category_id").value(a.category_id).key("segmentation");
    writeSegmentation(json, a);
    const std::array<double, 4> box = toBbox(a.rle);
    json.key("area").value(static_cast<double>(area(a.rle))).key("bbox").beginArray();
    for (double v : box)
      json.value(v);
    json.endArray();
    json.key("iscrowd").value(a.encoding == Encoding::kCrowdRle ? 1 : 0).endObject();
    ++summary.annotations;
    summary.polygons += a.encoding == Encoding::kPolygons;
    summary.rles += a.encoding == Encoding::kRle;
    summary.crowds += a.encoding == Encoding::kCrowdRle;
  }
  json.endArray();
  json.endObject();
  io::writeFileAtomic(shapesAnnotationFile(options.root, split), text.str());
  removeStaleFiles(imageDir, count);
  return summary;
}

}  // namespace

fs::path shapesImageDir(const fs::path& root, std::string_view split) {
  return root / "images" / split;
}

fs::path shapesAnnotationFile(const fs::path& root, std::string_view split) {
  return root / "annotations" / ("instances_" + std::string(split) + ".json");
}

ShapesSummary generateShapes(const ShapesOptions& options) {
  validate(options);
  if (std::optional<ShapesSummary> current = upToDate(options)) {
    current->generated = false;
    return *current;
  }
  makeDirectories(options.root);
  // Invalidate first: a run killed half-way must not leave a stamp that vouches for it.
  std::error_code ec;
  fs::remove(stampPath(options.root), ec);
  if (ec) throw std::runtime_error("cannot remove " + stampPath(options.root).string());

  ShapesSummary summary;
  summary.train = generateSplit(options, "train", options.train_images);
  summary.val = generateSplit(options, "val", options.val_images);
  summary.generated = true;
  io::writeFileAtomic(stampPath(options.root), stampOptions(options) + stampSummary(summary));
  return summary;
}

}  // namespace mrcnn::dataset
