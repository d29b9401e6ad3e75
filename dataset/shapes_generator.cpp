#include "dataset/shapes_generator.h"

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

#include "dataset/json_writer.h"
#include "dataset/rle.h"

namespace mrcnn::dataset {
namespace {

namespace fs = std::filesystem;

// Bump when the output for the same options changes: old stamps then no longer match.
constexpr int kGeneratorVersion = 1;
constexpr int kJpegQuality = 90;
constexpr int kMinVisibleArea = 10;     // smaller leftovers of occluded shapes are dropped
constexpr double kRleShare = 0.07;      // plus shapes with holes or slivers: ~10% RLE in all
constexpr double kCrowdChance = 0.12;   // per image: ~3% of annotations are crowd regions
constexpr double kMinPolygonIou = 0.8;  // worse polygons are stored as RLE instead

constexpr std::array<std::string_view, 6> kCategories = {"circle", "square",  "triangle",
                                                         "star",   "ellipse", "hexagon"};
enum Category { kCircle = 1, kSquare, kTriangle, kStar, kEllipse, kHexagon };

// ---------------------------------------------------------------------------------------------
// Randomness. std::mt19937_64's sequence is fixed by the standard, the std distributions are
// not; these helpers are, so every platform draws the same numbers.

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int uniformInt(int lo, int hi) {  // [lo, hi]; the modulo bias is negligible at our ranges
    return lo + static_cast<int>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return uniform() < p; }
  // Approximately N(0, 1): the sum of four uniforms (Irwin-Hall), cheap and libm-free.
  double normal() {
    const uint64_t r = engine_();
    double sum = 0;
    for (int i = 0; i < 4; ++i)
      sum += static_cast<double>((r >> (16 * i)) & 0xffff) / 65536.0;
    return (sum - 2.0) * std::numbers::sqrt3;
  }

 private:
  std::mt19937_64 engine_;
};

// One independent stream per (seed, split, image, purpose): an image never depends on the
// images generated before it.
uint64_t streamSeed(uint32_t seed, std::string_view split, int index, uint64_t purpose) {
  uint64_t s = splitmix64(seed);
  s = splitmix64(s ^ fnv1a(split));
  s = splitmix64(s ^ static_cast<uint64_t>(index));
  return splitmix64(s ^ purpose);
}
constexpr uint64_t kRenderStream = 1;
constexpr uint64_t kEncodeStream = 2;

// ---------------------------------------------------------------------------------------------
// Painting.

// A colour from all hues; foreground and clutter draw from the same distribution so that
// colour alone never tells a shape from the background.
cv::Vec3f randomColor(Rng& rng) {
  const double h = rng.uniform(0, 6), s = rng.uniform(0.15, 1.0), v = rng.uniform(0.2, 1.0);
  const int sector = static_cast<int>(h);
  const double f = h - sector;
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r = v, g = t, b = p;
  switch (sector) {
    case 0:
      r = v, g = t, b = p;
      break;
    case 1:
      r = q, g = v, b = p;
      break;
    case 2:
      r = p, g = v, b = t;
      break;
    case 3:
      r = p, g = q, b = v;
      break;
    case 4:
      r = t, g = p, b = v;
      break;
    default:
      r = v, g = p, b = q;
      break;
  }
  return {static_cast<float>(255 * b), static_cast<float>(255 * g), static_cast<float>(255 * r)};
}

cv::Vec3f jitterColor(Rng& rng, const cv::Vec3f& c, double amount) {
  cv::Vec3f out;
  for (int i = 0; i < 3; ++i)
    out[i] = c[i] + static_cast<float>(rng.uniform(-amount, amount));
  return out;
}

// Fills `mask` pixels of the float canvas with a colour that varies along a random direction
// (and, sometimes, in stripes): flat fills would make segmentation a colour lookup.
void paintTextured(cv::Mat& canvas, const cv::Mat& mask, const cv::Rect& box, Rng& rng,
                   const cv::Vec3f& base, double opacity = 1.0) {
  const double angle = rng.uniform(0, 2 * std::numbers::pi);
  const double dirX = std::cos(angle), dirY = std::sin(angle);
  const double slope = rng.uniform(0, 60) / std::max(box.width, box.height);
  const double stripes = rng.chance(0.25) ? rng.uniform(0.3, 1.2) : 0.0;
  const double stripeAmp = rng.uniform(10, 35);
  const cv::Vec3f tint = jitterColor(rng, cv::Vec3f(1, 1, 1), 0.3);
  const auto alpha = static_cast<float>(opacity);
  for (int y = box.y; y < box.y + box.height; ++y) {
    const uint8_t* m = mask.ptr<uint8_t>(y);
    auto* px = canvas.ptr<cv::Vec3f>(y);
    for (int x = box.x; x < box.x + box.width; ++x) {
      if (m[x] == 0) continue;
      const double t = (x - box.x) * dirX + (y - box.y) * dirY;
      double shade = slope * t - 30;
      if (stripes > 0) shade += stripeAmp * std::sin(stripes * t);
      const cv::Vec3f c = base + tint * static_cast<float>(shade);
      px[x] = px[x] * (1 - alpha) + c * alpha;
    }
  }
}

cv::Rect maskBox(const cv::Mat& mask) {
  const cv::Rect box = cv::boundingRect(mask);
  return box.area() > 0 ? box : cv::Rect(0, 0, 0, 0);
}

// Rasterises a polygon (sub-pixel vertices) into a 0/1 mask of the image's size.
cv::Mat fillPolygon(const std::vector<cv::Point2d>& vertices, cv::Size size) {
  constexpr int kShift = 4;  // 1/16 px vertex precision
  std::vector<cv::Point> fixed;
  fixed.reserve(vertices.size());
  for (const cv::Point2d& p : vertices) {
    fixed.emplace_back(static_cast<int>(std::lround(p.x * (1 << kShift))),
                       static_cast<int>(std::lround(p.y * (1 << kShift))));
  }
  cv::Mat mask(size, CV_8UC1, cv::Scalar(0));
  cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{fixed}, cv::Scalar(1), cv::LINE_8, kShift);
  return mask;
}

// The outline of a shape of `category` with circumradius r, rotated by `angle`.
std::vector<cv::Point2d> shapeOutline(int category, cv::Point2d c, double r, double angle,
                                      Rng& rng) {
  std::vector<cv::Point2d> pts;
  auto ring = [&](int n, double rx, double ry, double phase) {
    for (int i = 0; i < n; ++i) {
      const double a = phase + 2 * std::numbers::pi * i / n;
      const double px = rx * std::cos(a), py = ry * std::sin(a);
      pts.emplace_back(c.x + px * std::cos(angle) - py * std::sin(angle),
                       c.y + px * std::sin(angle) + py * std::cos(angle));
    }
  };
  switch (category) {
    case kCircle:
      ring(48, r, r, 0);
      break;
    case kSquare:
      ring(4, r, r, std::numbers::pi / 4);
      break;
    case kHexagon:
      ring(6, r, r, 0);
      break;
    case kEllipse:
      ring(48, r, r * rng.uniform(0.35, 0.6), 0);
      break;
    case kTriangle: {
      for (int i = 0; i < 3; ++i) {
        const double a = angle + 2 * std::numbers::pi * i / 3 + rng.uniform(-0.15, 0.15);
        const double rr = r * rng.uniform(0.9, 1.0);
        pts.emplace_back(c.x + rr * std::cos(a), c.y + rr * std::sin(a));
      }
      break;
    }
    default: {  // star: five points
      const double inner = r * rng.uniform(0.38, 0.55);
      for (int i = 0; i < 10; ++i) {
        const double a = angle + std::numbers::pi * i / 5;
        const double rr = i % 2 == 0 ? r : inner;
        pts.emplace_back(c.x + rr * std::cos(a), c.y + rr * std::sin(a));
      }
    }
  }
  return pts;
}

// Smooth irregular blobs in foreground colours: clutter that is no shape class. The outline
// is a low-order Fourier series in the angle, so blobs are curvy and never pass for a polygon.
std::vector<cv::Point2d> blobOutline(cv::Point2d c, double r, Rng& rng) {
  std::array<double, 3> amp{}, phase{};
  for (size_t k = 0; k < amp.size(); ++k) {
    // The third harmonic is never small: a blob must not pass for a circle or an ellipse.
    amp[k] = k == 2 ? rng.uniform(0.15, 0.35) : rng.uniform(0, 0.3);
    phase[k] = rng.uniform(0, 2 * std::numbers::pi);
  }
  constexpr int kVertices = 32;
  std::vector<cv::Point2d> pts;
  for (int i = 0; i < kVertices; ++i) {
    const double a = 2 * std::numbers::pi * i / kVertices;
    double rr = 1;
    for (size_t k = 0; k < amp.size(); ++k)
      rr += amp[k] * std::sin((k + 1.0) * a + phase[k]);
    rr = r * std::max(0.2, rr) / 2;
    pts.emplace_back(c.x + rr * std::cos(a), c.y + rr * std::sin(a));
  }
  return pts;
}

// `count` scaled by the clutter factor: the draw happens whatever the factor, so that a factor
// of 1 paints exactly what the generator always painted.
int scaledCount(int count, double clutter) {
  return static_cast<int>(std::lround(count * clutter));
}

void paintBackground(cv::Mat& canvas, Rng& rng, double clutter) {
  const int w = canvas.cols, h = canvas.rows;
  // A gradient between two random colours along a random direction.
  const cv::Vec3f c0 = randomColor(rng), c1 = randomColor(rng);
  const double angle = rng.uniform(0, 2 * std::numbers::pi);
  const double dx = std::cos(angle), dy = std::sin(angle);
  const double lowest = std::min(0.0, dx * w) + std::min(0.0, dy * h);
  const double span = std::abs(dx) * w + std::abs(dy) * h;
  for (int y = 0; y < h; ++y) {
    auto* px = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < w; ++x) {
      const double t = (x * dx + y * dy - lowest) / span;
      px[x] = c0 * static_cast<float>(1 - t) + c1 * static_cast<float>(t);
    }
  }
  // Low-frequency colour noise: smooth blotches.
  cv::Mat coarse(rng.uniformInt(3, 8), rng.uniformInt(3, 8), CV_32FC3);
  const double blotch = rng.uniform(10, 50);
  for (int y = 0; y < coarse.rows; ++y) {
    for (int x = 0; x < coarse.cols; ++x) {
      for (int ch = 0; ch < 3; ++ch) {
        coarse.at<cv::Vec3f>(y, x)[ch] = static_cast<float>(rng.uniform(-blotch, blotch));
      }
    }
  }
  cv::Mat smooth;
  cv::resize(coarse, smooth, canvas.size(), 0, 0, cv::INTER_CUBIC);
  canvas += smooth;
  // Clutter: blobs, lines and arcs in colours like the shapes'.
  const int blobs = scaledCount(rng.uniformInt(1, 5), clutter);
  for (int i = 0; i < blobs; ++i) {
    const cv::Point2d c(rng.uniform(0, w), rng.uniform(0, h));
    const double r = rng.uniform(6, std::min(w, h) / 4.0);
    const cv::Mat mask = fillPolygon(blobOutline(c, r, rng), canvas.size());
    const cv::Rect box = maskBox(mask);
    if (box.area() > 0)
      paintTextured(canvas, mask, box, rng, randomColor(rng), rng.uniform(0.4, 1));
  }
  const int lines = scaledCount(rng.uniformInt(2, 9), clutter);
  for (int i = 0; i < lines; ++i) {
    const cv::Point a(rng.uniformInt(-w / 4, w + w / 4), rng.uniformInt(-h / 4, h + h / 4));
    const cv::Point b(rng.uniformInt(-w / 4, w + w / 4), rng.uniformInt(-h / 4, h + h / 4));
    const cv::Vec3f c = randomColor(rng);
    cv::line(canvas, a, b, cv::Scalar(c[0], c[1], c[2]), rng.uniformInt(1, 4), cv::LINE_AA);
  }
  const int arcs = scaledCount(rng.uniformInt(0, 3), clutter);
  for (int i = 0; i < arcs; ++i) {
    const cv::Point c(rng.uniformInt(0, w - 1), rng.uniformInt(0, h - 1));
    const int r = rng.uniformInt(8, std::min(w, h) / 3);
    const double start = rng.uniform(0, 360);
    const cv::Vec3f col = randomColor(rng);
    cv::ellipse(canvas, c, cv::Size(r, static_cast<int>(r * rng.uniform(0.5, 1))),
                rng.uniform(0, 180), start, start + rng.uniform(60, 220),
                cv::Scalar(col[0], col[1], col[2]), rng.uniformInt(1, 3), cv::LINE_AA);
  }
}

struct Placed {
  cv::Point2d centre;
  double radius = 0;
};

// One z-layer: a single shape, or a crowd cluster painted as one.
struct Layer {
  int category = 0;
  bool crowd = false;
  cv::Mat painted;
};

Layer makeShape(Rng& rng, cv::Size size, int categories, double minDiameter,
                const std::vector<Placed>& placed) {
  Layer layer;
  layer.category = rng.uniformInt(1, categories);
  // Log-uniform diameter from the smallest size to half the image: small shapes are as common
  // as large.
  const double maxDiameter = std::max(minDiameter + 1, std::min(size.width, size.height) / 2.0);
  const double r = std::exp(rng.uniform(std::log(minDiameter), std::log(maxDiameter))) / 2;
  cv::Point2d c(rng.uniform(0, size.width), rng.uniform(0, size.height));
  if (!placed.empty() && rng.chance(0.4)) {
    // Next to an earlier shape, so that shapes overlap and occlude each other often.
    const Placed& other =
        placed[static_cast<size_t>(rng.uniformInt(0, static_cast<int>(placed.size()) - 1))];
    const double a = rng.uniform(0, 2 * std::numbers::pi);
    const double d = rng.uniform(0.3, 1.1) * (r + other.radius);
    c = {std::clamp(other.centre.x + d * std::cos(a), 0.0, size.width - 1.0),
         std::clamp(other.centre.y + d * std::sin(a), 0.0, size.height - 1.0)};
  }
  const double angle = rng.uniform(0, 2 * std::numbers::pi);
  layer.painted = fillPolygon(shapeOutline(layer.category, c, r, angle, rng), size);
  return layer;
}

Layer makeCrowd(Rng& rng, cv::Size size, int categories) {
  Layer layer;
  layer.category = rng.uniformInt(1, categories);
  layer.crowd = true;
  layer.painted = cv::Mat(size, CV_8UC1, cv::Scalar(0));
  const cv::Point2d centre(rng.uniform(0, size.width), rng.uniform(0, size.height));
  const double spread = rng.uniform(14, 30);
  const int n = rng.uniformInt(6, 14);
  for (int i = 0; i < n; ++i) {
    const double a = rng.uniform(0, 2 * std::numbers::pi), d = spread * std::sqrt(rng.uniform());
    const cv::Point2d c(centre.x + d * std::cos(a), centre.y + d * std::sin(a));
    const double r = rng.uniform(3, 5.5);
    layer.painted |= fillPolygon(
        shapeOutline(layer.category, c, r, rng.uniform(0, 2 * std::numbers::pi), rng), size);
  }
  return layer;
}

void addPixelNoise(cv::Mat& canvas, Rng& rng) {
  const double sigma = rng.uniform(2, 9);
  for (int y = 0; y < canvas.rows; ++y) {
    auto* px = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < canvas.cols; ++x) {
      for (int ch = 0; ch < 3; ++ch)
        px[x][ch] += static_cast<float>(sigma * rng.normal());
    }
  }
}

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

void writeSegmentation(JsonWriter& json, const Annotation& a) {
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

void writeFileAtomically(const fs::path& path, std::string_view bytes) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot create " + tmp.string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                             ec.message());
}

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
  if (o.categories < 1 || o.categories > static_cast<int>(kCategories.size()))
    fail("categories must be in 1.." + std::to_string(kCategories.size()));
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
  JsonWriter json(text);
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
    json.beginObject().key("id").value(i + 1).key("name").value(kCategories[i]);
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
    writeFileAtomically(file, {reinterpret_cast<const char*>(jpeg.data()), jpeg.size()});
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
  writeFileAtomically(shapesAnnotationFile(options.root, split), text.str());
  removeStaleFiles(imageDir, count);
  return summary;
}

}  // namespace

const std::array<std::string_view, 6>& shapesCategories() {
  return kCategories;
}

fs::path shapesImageDir(const fs::path& root, std::string_view split) {
  return root / "images" / split;
}

fs::path shapesAnnotationFile(const fs::path& root, std::string_view split) {
  return root / "annotations" / ("instances_" + std::string(split) + ".json");
}

ShapesScene renderShapesScene(const ShapesOptions& options, std::string_view split, int index) {
  Rng rng(streamSeed(options.seed, split, index, kRenderStream));
  const cv::Size size(rng.uniformInt(options.min_side, options.max_side),
                      rng.uniformInt(options.min_side, options.max_side));
  cv::Mat canvas(size, CV_32FC3);
  paintBackground(canvas, rng, options.clutter);

  // Shapes in z-order, a crowd cluster sometimes among them.
  std::vector<Layer> layers;
  std::vector<Placed> placed;
  const int shapes = rng.uniformInt(1, std::max(1, options.max_shapes));
  for (int i = 0; i < shapes; ++i) {
    layers.push_back(makeShape(rng, size, options.categories, options.min_shape_size, placed));
    const cv::Rect box = maskBox(layers.back().painted);
    placed.push_back({cv::Point2d(box.x + box.width / 2.0, box.y + box.height / 2.0),
                      std::max(box.width, box.height) / 2.0});
  }
  if (rng.chance(kCrowdChance)) {
    const int at = rng.uniformInt(0, static_cast<int>(layers.size()));
    layers.insert(layers.begin() + at, makeCrowd(rng, size, options.categories));
  }

  // Paint back to front; `owner` keeps which layer each pixel shows.
  cv::Mat owner(size, CV_32SC1, cv::Scalar(-1));
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = layers[i];
    const cv::Rect box = maskBox(layer.painted);
    if (box.area() == 0) continue;
    const cv::Vec3f base = randomColor(rng);
    paintTextured(canvas, layer.painted, box, rng, base);
    if (!layer.crowd && rng.chance(0.3)) {  // an outline in another colour, sometimes
      cv::Mat inner;
      cv::erode(layer.painted, inner, cv::Mat(), cv::Point(-1, -1), rng.uniformInt(1, 2));
      const cv::Mat rim = layer.painted - inner;
      paintTextured(canvas, rim, box, rng, randomColor(rng));
    }
    owner.setTo(static_cast<int>(i), layer.painted);
  }
  addPixelNoise(canvas, rng);
  if (rng.chance(0.5)) cv::GaussianBlur(canvas, canvas, cv::Size(3, 3), rng.uniform(0.4, 0.9));

  ShapesScene scene;
  canvas.convertTo(scene.image, CV_8UC3);
  for (size_t i = 0; i < layers.size(); ++i) {
    cv::Mat visible = (owner == static_cast<int>(i)) / 255;
    if (cv::countNonZero(visible) < kMinVisibleArea) continue;
    scene.instances.push_back({layers[i].category, layers[i].crowd, layers[i].painted, visible});
  }
  return scene;
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
  writeFileAtomically(stampPath(options.root), stampOptions(options) + stampSummary(summary));
  return summary;
}

}  // namespace mrcnn::dataset
