// The shapes dataset's images: each one painted from its own random stream (background,
// shapes in z-order, a crowd cluster sometimes, noise), with what every instance painted and
// what stays visible of it. dataset/shapes/shapes_generator.cpp annotates and writes them.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <opencv2/imgproc.hpp>

#include "dataset/shapes/shapes_generator.h"
#include "dataset/shapes/shapes_internal.h"

namespace mrcnn::dataset {
namespace {

using namespace shapes_detail;

constexpr double kCrowdChance = 0.12;  // per image: ~3% of annotations are crowd regions

constexpr std::array<std::string_view, 6> kCategories = {"circle", "square",  "triangle",
                                                         "star",   "ellipse", "hexagon"};
enum Category { kCircle = 1, kSquare, kTriangle, kStar, kEllipse, kHexagon };

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

}  // namespace

const std::array<std::string_view, 6>& shapesCategories() {
  return kCategories;
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

}  // namespace mrcnn::dataset
