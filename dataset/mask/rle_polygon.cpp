// pycocotools' polygon rasteriser (rleFrPoly) to the bit: the rleFromPolygon and
// rleFromPolygons of rle.h. This file is compiled without floating-point contraction (see
// dataset/CMakeLists.txt): its rounding must be pycocotools'.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "dataset/mask/rle.h"

namespace mrcnn::dataset {
namespace {

uint64_t pixelCount(uint32_t h, uint32_t w) {
  return uint64_t{h} * w;
}

// C's (int) cast of a double as x86-64 executes it (cvttsd2si): truncation toward zero, and
// INT_MIN for NaN or out-of-range values. pycocotools relies on both (a zero-length polygon
// edge yields 0/0); in C++ the plain cast would be undefined there.
int truncToInt(double d) {
  if (!(d > -2147483649.0 && d < 2147483648.0)) return std::numeric_limits<int>::min();
  return static_cast<int>(d);
}

// rleFromPolygon's working memory, kept by each thread between calls: an import or an
// evaluation rasterises tens of thousands of small polygons.
struct PolygonScratch {
  std::vector<int> x, y;            // the vertices on the fine grid
  std::vector<uint32_t> starts;     // run starts (column * h + row)
  std::vector<uint64_t> columns;    // their columns
  std::vector<uint32_t> first;      // the counting sort's places
  std::vector<uint32_t> sorted;     // the starts in order, then the pixel count
};

// The run starts of rleFromPolygon's crossings, with their columns.
class Crossings {
 public:
  explicit Crossings(PolygonScratch& scratch) : s_(scratch) {
    s_.starts.clear();
    s_.columns.clear();
  }
  void push(uint64_t column, uint32_t start) {
    s_.starts.push_back(start);
    s_.columns.push_back(column);
    low_ = std::min(low_, column);
    high_ = std::max(high_, column);
  }
  // The starts and `end` (the pixel count) in increasing order. A column's starts lie between
  // those of the columns before and after it, so a counting sort over the columns the polygon
  // spans and an insertion sort of each column's few crossings order them; std::sort where a
  // start passes `end` (pycocotools' 32-bit arithmetic wraps; every column counts when w is
  // 0) or the columns spread far apart.
  std::vector<uint32_t>& sorted(uint32_t h, uint32_t end) {
    const size_t n = s_.starts.size();
    std::vector<uint32_t>& out = s_.sorted;
    const bool by_column = n > 0 && h > 0 && (high_ + 1) * uint64_t{h} <= end &&
                           high_ - low_ <= 4 * n + 64;
    if (!by_column) {
      out.assign(s_.starts.begin(), s_.starts.end());
      out.push_back(end);
      std::sort(out.begin(), out.end());
      return out;
    }
    std::vector<uint32_t>& first = s_.first;  // each column's first place
    first.assign(high_ - low_ + 2, 0);
    for (uint64_t c : s_.columns) ++first[c - low_ + 1];
    std::partial_sum(first.begin(), first.end(), first.begin());
    out.resize(n + 1);
    for (size_t i = 0; i < n; ++i) out[first[s_.columns[i] - low_]++] = s_.starts[i];
    // first[c] is now the end of column c: insertion-sort each column's stretch.
    size_t begin = 0;
    for (size_t c = 0; c + 1 < first.size(); ++c) {
      const size_t stop = first[c];
      for (size_t i = begin + 1; i < stop; ++i) {
        const uint32_t v = out[i];
        size_t j = i;
        for (; j > begin && out[j - 1] > v; --j) out[j] = out[j - 1];
        out[j] = v;
      }
      begin = stop;
    }
    out[n] = end;
    return out;
  }

 private:
  PolygonScratch& s_;
  uint64_t low_ = UINT64_MAX;
  uint64_t high_ = 0;
};

// The pixel grid of rleFromPolygon's crossings: a crossing between fine-grid points in the
// columns u and u + 1 lies on a pixel centre column when (u + .5) / 5 - .5 is a whole number
// c (u = 5c + 2), and counts when 0 <= c <= w - 1 (in size_t arithmetic, as pycocotools has
// it: every c >= 0 when w is 0).
struct CrossingGrid {
  uint32_t h = 0;
  uint64_t last_column = 0;  // w - 1 in 64-bit unsigned arithmetic

  CrossingGrid(uint32_t height, uint32_t width) : h(height), last_column(uint64_t{width} - 1) {}

  // Whether the centre column of fine-grid column u (u = 5c + 2) lies in the image.
  bool inside(int64_t u) const { return static_cast<uint64_t>((u - 2) / 5) <= last_column; }
  // The first fine-grid column from u that is a centre column of a column c >= 0.
  static int64_t firstCentre(int64_t u) {
    u = std::max<int64_t>(u, 2);
    const int64_t r = (u - 2) % 5;
    return r == 0 ? u : u + 5 - r;
  }
  // The run start of a crossing in the centre column of fine-grid column u whose two points'
  // lower row is v. pycocotools rounds the row as (v + .5) / 5 - .5 clamped to [0, h] and
  // rounded up: for a whole v that is (v - 2) / 5 rounded up, clamped, in whole numbers.
  void add(int64_t u, int v, Crossings& crossings) const {
    const int64_t q = int64_t{v} - 2;
    const int64_t row = q <= 0 ? 0 : std::min<int64_t>((q + 4) / 5, h);
    const int64_t column = (u - 2) / 5;
    crossings.push(static_cast<uint64_t>(column), static_cast<uint32_t>(column * h + row));
  }
  // The same for the crossing between two points of columns u0 != u1 (next to each other).
  void addBetween(int u0, int u1, int v, Crossings& crossings) const {
    const int64_t u = u1 < u0 ? u1 : int64_t{u1} - 1;
    if (u >= 2 && (u - 2) % 5 == 0 && inside(u)) add(u, v, crossings);
  }
};

// The crossings between consecutive points inside one edge of n steps from (xs, ys), stepping
// along x (the other coordinate is ys + s * t rounded as pycocotools rounds it) or along y.
// Along x every step moves one fine column, so only the steps whose lower column is a centre
// column are looked at. Along y the rounded column moves by at most one a step (|s| < 1) and
// monotonically, so each centre column between the ends is crossed at exactly one step, found
// from the line's equation and settled on the rounded values.
void addEdgeCrossings(const CrossingGrid& grid, bool along_x, int n, int xs, int ys, double s,
                      Crossings& crossings) {
  if (n <= 0) return;
  if (along_x) {
    const auto row = [&](int t) { return truncToInt(ys + s * t + .5); };
    for (int64_t u = CrossingGrid::firstCentre(xs); u < int64_t{xs} + n && grid.inside(u); u += 5) {
      const int t = static_cast<int>(u - xs);  // the step from t to t + 1 leaves column u
      grid.add(u, std::min(row(t), row(t + 1)), crossings);
    }
    return;
  }
  const auto col = [&](int t) { return truncToInt(xs + s * t + .5); };
  const int64_t c0 = col(0), c1 = col(n);
  if (c0 == c1) return;
  const bool rising = c1 > c0;
  const int64_t end = std::max(c0, c1);
  for (int64_t u = CrossingGrid::firstCentre(std::min(c0, c1)); u < end && grid.inside(u); u += 5) {
    // The first step t whose column is past u (rising) or at u (falling): the crossing lies
    // between t - 1 and t, whose lower row is ys + t - 1.
    const auto past = [&](int t) { return rising ? col(t) > u : col(t) <= u; };
    const double estimate = (static_cast<double>(u) + .5 - xs) / s;
    int t = static_cast<int>(std::clamp(rising ? std::ceil(estimate) : std::floor(estimate) + 1,
                                        1.0, static_cast<double>(n)));
    while (t > 1 && past(t - 1)) --t;
    while (t < n && !past(t)) ++t;
    grid.add(u, ys + t - 1, crossings);
  }
}

}  // namespace

Rle rleFromPolygon(std::span<const double> xy, uint32_t h, uint32_t w) {
  constexpr double kScale = 5;  // pycocotools walks the boundary on a 5x finer grid
  const size_t k = xy.size() / 2;
  for (double c : xy.first(2 * k)) {
    // Beyond this a polygon would need billions of boundary points (pycocotools would just
    // exhaust memory); such a coordinate is corrupt data, for the caller to report.
    if (!(std::abs(c) <= 1e7)) {
      throw std::invalid_argument("rleFromPolygon: coordinate " + std::to_string(c) +
                                  " is not finite or beyond 1e7");
    }
  }
  if (k == 0) return Rle{h, w, {static_cast<uint32_t>(pixelCount(h, w))}};
  // pycocotools walks every fine-grid point of the boundary, inside the image or not: a
  // polygon reaching far outside the image costs seconds and gigabytes for nothing it draws.
  // Coordinates more than 64 image sizes away, or a boundary far longer than any polygon of
  // this image needs (40 times the image's perimeter per vertex, beyond 2e7 points), are
  // corrupt data for the caller to report. Polygons in and around the image are unaffected.
  const double side = std::max(h, w) + 64.0;
  for (double c : xy.first(2 * k)) {
    if (std::abs(c) > 64 * side) {
      throw std::invalid_argument("rleFromPolygon: coordinate " + std::to_string(c) +
                                  " lies too far outside the " + std::to_string(w) + "x" +
                                  std::to_string(h) + " image");
    }
  }

  // Vertices on the fine grid, rounded half up the way C's (int)(v + .5) does it.
  thread_local PolygonScratch scratch;
  std::vector<int>& x = scratch.x;
  std::vector<int>& y = scratch.y;
  x.resize(k + 1);
  y.resize(k + 1);
  for (size_t j = 0; j < k; ++j) {
    x[j] = truncToInt(kScale * xy[2 * j] + .5);
    y[j] = truncToInt(kScale * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];
  double boundary = 0;
  for (size_t j = 0; j < k; ++j)
    boundary += std::max(std::abs(static_cast<double>(x[j + 1]) - x[j]),
                         std::abs(static_cast<double>(y[j + 1]) - y[j])) +
                1;
  const double budget = 2e7 + 40.0 * static_cast<double>(k) * (static_cast<double>(h) + w);
  if (boundary > budget) {
    throw std::invalid_argument("rleFromPolygon: a boundary of " +
                                std::to_string(static_cast<uint64_t>(boundary)) + " points for a " +
                                std::to_string(w) + "x" + std::to_string(h) +
                                " image (its coordinates reach far outside it)");
  }

  // pycocotools walks every fine-grid point along every edge, stepping along the edge's longer
  // axis, each edge from its lower end, its points taken in polygon order. Where the boundary
  // crosses a pixel centre column between two consecutive points (also from one edge's last
  // point to the next edge's first), the first pixel row below it starts a run. Only those
  // crossings matter, and their order does not (they are sorted below): each edge's first
  // point is compared with the previous edge's last, and inside an edge the steps that cross a
  // centre column are found directly, not walked (see addEdgeCrossings).
  Crossings crossings(scratch);
  const CrossingGrid grid(h, w);
  bool first = true;
  int pu = 0, pv = 0;  // the previous edge's last point
  for (size_t j = 0; j < k; ++j) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    // The edge's points by their step t from its lower end; it is walked from t = 0, or from
    // t = n when flipped. dx == 0 == dy is a zero-length edge: pycocotools computes 0/0 and
    // gets INT_MIN.
    const bool along_x = dx >= dy;
    const int n = along_x ? dx : dy;
    const double s = along_x ? static_cast<double>(ye - ys) / dx : static_cast<double>(xe - xs) / dy;
    const auto point = [&](int t) {
      return along_x ? std::pair{t + xs, truncToInt(ys + s * t + .5)}
                     : std::pair{truncToInt(xs + s * t + .5), t + ys};
    };
    const auto [u0, v0] = point(flip ? n : 0);
    if (!first && u0 != pu) grid.addBetween(pu, u0, std::min(v0, pv), crossings);
    first = false;
    addEdgeCrossings(grid, along_x, n, xs, ys, s, crossings);
    std::tie(pu, pv) = point(flip ? 0 : n);
  }

  // Each crossing toggles inside/outside from there on down the column-major order: sort
  // them, take differences, and cancel toggles that fall on the same pixel.
  std::vector<uint32_t>& starts = crossings.sorted(h, static_cast<uint32_t>(pixelCount(h, w)));
  uint32_t previous = 0;
  for (uint32_t& s : starts) {
    const uint32_t t = s;
    s -= previous;
    previous = t;
  }
  Rle rle{h, w, {}};
  rle.counts.reserve(starts.size());
  rle.counts.push_back(starts[0]);
  for (size_t j = 1; j < starts.size();) {
    if (starts[j] > 0) {
      rle.counts.push_back(starts[j++]);
    } else {
      ++j;
      if (j < starts.size()) rle.counts.back() += starts[j++];
    }
  }
  return rle;
}

Rle rleFromPolygons(std::span<const Polygon> polygons, uint32_t h, uint32_t w) {
  if (polygons.empty()) return Rle{h, w, {static_cast<uint32_t>(pixelCount(h, w))}};
  std::vector<Rle> parts;
  parts.reserve(polygons.size());
  for (const Polygon& p : polygons)
    parts.push_back(rleFromPolygon(p, h, w));
  return merge(parts);
}

}  // namespace mrcnn::dataset
