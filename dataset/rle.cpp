#include "dataset/rle.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace mrcnn::dataset {
namespace {

uint64_t pixelCount(uint32_t h, uint32_t w) {
  return uint64_t{h} * w;
}

uint64_t runSum(const Rle& rle) {
  return std::accumulate(rle.counts.begin(), rle.counts.end(), uint64_t{0});
}

void requireComplete(const Rle& rle, const char* what) {
  if (runSum(rle) != pixelCount(rle.h, rle.w)) {
    throw std::invalid_argument(std::string(what) + ": the runs add up to " +
                                std::to_string(runSum(rle)) + " pixels, the mask has " +
                                std::to_string(rle.h) + "x" + std::to_string(rle.w));
  }
}

// C's (int) cast of a double as x86-64 executes it (cvttsd2si): truncation toward zero, and
// INT_MIN for NaN or out-of-range values. pycocotools relies on both (a zero-length polygon
// edge yields 0/0); in C++ the plain cast would be undefined there.
int truncToInt(double d) {
  if (!(d > -2147483649.0 && d < 2147483648.0)) return std::numeric_limits<int>::min();
  return static_cast<int>(d);
}

// Walks the runs of one mask, skipping zero-length runs, for merge().
class RunCursor {
 public:
  explicit RunCursor(const Rle& rle) : counts_(rle.counts) { skipEmpty(); }
  uint32_t remaining() const { return remaining_; }
  bool value() const { return value_; }
  void advance(uint32_t n) {
    remaining_ -= n;
    skipEmpty();
  }

 private:
  void skipEmpty() {
    while (remaining_ == 0 && next_ < counts_.size()) {
      remaining_ = counts_[next_++];
      value_ = !value_;
    }
  }
  const std::vector<uint32_t>& counts_;
  size_t next_ = 0;
  uint32_t remaining_ = 0;
  bool value_ = true;  // flipped to false by the first run
};

Rle mergeTwo(const Rle& a, const Rle& b, bool intersect) {
  Rle out{a.h, a.w, {}};
  RunCursor ca(a);
  RunCursor cb(b);
  const uint64_t total = pixelCount(a.h, a.w);
  uint64_t done = 0;
  uint32_t run = 0;
  bool value = false;
  while (done < total) {
    const uint32_t step = std::min(ca.remaining(), cb.remaining());
    const bool v = intersect ? (ca.value() && cb.value()) : (ca.value() || cb.value());
    if (v != value) {
      out.counts.push_back(run);
      run = 0;
      value = v;
    }
    run += step;
    done += step;
    ca.advance(step);
    cb.advance(step);
  }
  out.counts.push_back(run);
  return out;
}

}  // namespace

Rle encodeMask(const cv::Mat& mask) {
  if (mask.type() != CV_8UC1 || mask.dims != 2) {
    throw std::invalid_argument("encodeMask: expected a 2-D CV_8UC1 mask");
  }
  Rle rle{static_cast<uint32_t>(mask.rows), static_cast<uint32_t>(mask.cols), {}};
  bool value = false;
  uint32_t run = 0;
  for (int x = 0; x < mask.cols; ++x) {
    for (int y = 0; y < mask.rows; ++y) {
      if ((mask.ptr<uint8_t>(y)[x] != 0) != value) {
        rle.counts.push_back(run);
        run = 0;
        value = !value;
      }
      ++run;
    }
  }
  rle.counts.push_back(run);
  return rle;
}

Rle encodeColumnMajor(std::span<const uint8_t> data, uint32_t h, uint32_t w) {
  if (data.size() != pixelCount(h, w)) {
    throw std::invalid_argument("encodeColumnMajor: " + std::to_string(data.size()) +
                                " bytes for a " + std::to_string(h) + "x" + std::to_string(w) +
                                " mask");
  }
  Rle rle{h, w, {}};
  bool value = false;
  uint32_t run = 0;
  for (uint8_t pixel : data) {
    if ((pixel != 0) != value) {
      rle.counts.push_back(run);
      run = 0;
      value = !value;
    }
    ++run;
  }
  rle.counts.push_back(run);
  return rle;
}

cv::Mat decodeMask(const Rle& rle) {
  requireComplete(rle, "decodeMask");
  cv::Mat mask(static_cast<int>(rle.h), static_cast<int>(rle.w), CV_8UC1, cv::Scalar(0));
  uint64_t pos = 0;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    if (i % 2 == 1) {
      for (uint64_t p = pos; p < pos + rle.counts[i]; ++p) {
        mask.ptr<uint8_t>(static_cast<int>(p % rle.h))[p / rle.h] = 1;
      }
    }
    pos += rle.counts[i];
  }
  return mask;
}

uint64_t area(const Rle& rle) {
  uint64_t sum = 0;
  for (size_t i = 1; i < rle.counts.size(); i += 2)
    sum += rle.counts[i];
  return sum;
}

std::array<double, 4> toBbox(const Rle& rle) {
  // Mirrors pycocotools 2.0.x: only odd-length run lists' trailing background is ignored,
  // zero-length foreground runs are skipped, a run that wraps a column spans all rows. The
  // arithmetic is uint32 like there, so even degenerate inputs give pycocotools' numbers.
  const uint32_t h = rle.h;
  const size_t m = rle.counts.size() / 2 * 2;
  if (m == 0 || h == 0) return {0, 0, 0, 0};
  uint32_t xs = rle.w, ys = h, xe = 0, ye = 0, cc = 0;
  for (size_t j = 0; j < m; ++j) {
    const uint32_t start = cc;
    cc += rle.counts[j];
    if (j % 2 == 0 || rle.counts[j] == 0) continue;
    const uint32_t yStart = start % h, xStart = start / h;
    const uint32_t yEnd = (cc - 1) % h, xEnd = (cc - 1) / h;
    xs = std::min(xs, xStart);
    xe = std::max(xe, xEnd);
    if (xStart < xEnd) {
      ys = 0;
      ye = h - 1;
    } else {
      ys = std::min(ys, yStart);
      ye = std::max(ye, yEnd);
    }
  }
  return {static_cast<double>(xs), static_cast<double>(ys),
          static_cast<double>(static_cast<uint32_t>(xe - xs + 1)),
          static_cast<double>(static_cast<uint32_t>(ye - ys + 1))};
}

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

  // Vertices on the fine grid, rounded half up the way C's (int)(v + .5) does it.
  std::vector<int> x(k + 1), y(k + 1);
  for (size_t j = 0; j < k; ++j) {
    x[j] = truncToInt(kScale * xy[2 * j] + .5);
    y[j] = truncToInt(kScale * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];

  // Every fine-grid point along every edge, stepping along the edge's longer axis. Each edge
  // is walked from its lower end and stored in polygon order, as pycocotools does.
  std::vector<int> u, v;
  for (size_t j = 0; j < k; ++j) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    if (dx >= dy) {
      // dx == 0 here is a zero-length edge: pycocotools computes 0/0 and gets INT_MIN.
      const double s = static_cast<double>(ye - ys) / dx;
      for (int d = 0; d <= dx; ++d) {
        const int t = flip ? dx - d : d;
        u.push_back(t + xs);
        v.push_back(truncToInt(ys + s * t + .5));
      }
    } else {
      const double s = static_cast<double>(xe - xs) / dy;
      for (int d = 0; d <= dy; ++d) {
        const int t = flip ? dy - d : d;
        v.push_back(t + ys);
        u.push_back(truncToInt(xs + s * t + .5));
      }
    }
  }

  // Where the boundary crosses a pixel centre column, the first pixel row below it.
  std::vector<uint32_t> starts;
  const double lastColumn = static_cast<double>(uint64_t{w} - 1);  // size_t arithmetic there
  for (size_t j = 1; j < u.size(); ++j) {
    if (u[j] == u[j - 1]) continue;
    double xd = u[j] < u[j - 1] ? u[j] : u[j] - 1;
    xd = (xd + .5) / kScale - .5;
    if (std::floor(xd) != xd || xd < 0 || xd > lastColumn) continue;
    double yd = std::min(v[j], v[j - 1]);
    yd = (yd + .5) / kScale - .5;
    if (yd < 0) {
      yd = 0;
    } else if (yd > h) {
      yd = h;
    }
    yd = std::ceil(yd);
    starts.push_back(static_cast<uint32_t>(static_cast<int64_t>(xd) * h + static_cast<int>(yd)));
  }

  // Each crossing toggles inside/outside from there on down the column-major order: sort
  // them, take differences, and cancel toggles that fall on the same pixel.
  starts.push_back(static_cast<uint32_t>(pixelCount(h, w)));
  std::sort(starts.begin(), starts.end());
  uint32_t previous = 0;
  for (uint32_t& s : starts) {
    const uint32_t t = s;
    s -= previous;
    previous = t;
  }
  Rle rle{h, w, {}};
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

Rle merge(std::span<const Rle> rles, bool intersect) {
  if (rles.empty()) return Rle{};
  // One input is returned as it is, as pycocotools does (no canonicalisation).
  if (rles.size() == 1) return rles[0];
  for (const Rle& r : rles) {
    if (r.h != rles[0].h || r.w != rles[0].w) {
      throw std::invalid_argument("merge: masks of different sizes");
    }
    requireComplete(r, "merge");
  }
  Rle out = mergeTwo(rles[0], rles[1], intersect);
  for (size_t i = 2; i < rles.size(); ++i)
    out = mergeTwo(out, rles[i], intersect);
  return out;
}

std::string toCompressedString(const Rle& rle) {
  std::string s;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    int64_t x = rle.counts[i];
    // Runs repeat with the shape's width: coding the change from two runs back keeps
    // numbers small. The first three are coded as they are.
    if (i > 2) x -= rle.counts[i - 2];
    bool more = true;
    while (more) {
      int64_t c = x & 0x1f;
      x >>= 5;  // arithmetic: a negative difference keeps its sign
      more = (c & 0x10) != 0 ? x != -1 : x != 0;
      if (more) c |= 0x20;
      s.push_back(static_cast<char>(c + 48));
    }
  }
  return s;
}

Rle fromCompressedString(std::string_view counts, uint32_t h, uint32_t w) {
  Rle rle{h, w, {}};
  size_t p = 0;
  while (p < counts.size()) {
    int64_t x = 0;
    int k = 0;
    bool more = true;
    while (more) {
      if (p >= counts.size()) {
        throw std::invalid_argument("RLE counts string ends inside a number");
      }
      const int c = static_cast<unsigned char>(counts[p]) - 48;
      if (c < 0 || c > 63) {
        throw std::invalid_argument("RLE counts string has a character outside '0'..'o' at " +
                                    std::to_string(p));
      }
      if (k >= 12) throw std::invalid_argument("RLE counts string has a number too long");
      x |= static_cast<int64_t>(c & 0x1f) << (5 * k);
      more = (c & 0x20) != 0;
      ++p;
      ++k;
      if (!more && (c & 0x10) != 0) x |= ~int64_t{0} << (5 * k);  // sign-extend
    }
    if (rle.counts.size() > 2) x += rle.counts[rle.counts.size() - 2];
    rle.counts.push_back(static_cast<uint32_t>(x));
  }
  return rle;
}

}  // namespace mrcnn::dataset
