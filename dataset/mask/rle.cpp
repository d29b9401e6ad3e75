#include "dataset/mask/rle.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

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

// Both masks' runs walked side by side the way pycocotools' rleIou walks them, for iou():
// at most one new run per mask and step, uint32 sums that wrap as there, and a stop as soon
// as both current runs are used up, even when zero-length runs follow (not at the end of
// complete canonical masks, but it changes the result of non-canonical ones).
struct Overlap {
  uint32_t intersection = 0;
  uint32_t union_ = 0;
};

Overlap overlap(const Rle& a, const Rle& b) {
  Overlap o;
  if (a.counts.empty() || b.counts.empty()) return o;  // empty boxes: never asked for
  const uint32_t* ra = a.counts.data();
  const uint32_t* rb = b.counts.data();
  const size_t ka = a.counts.size(), kb = b.counts.size();
  uint32_t ca = ra[0], cb = rb[0];
  size_t ia = 1, ib = 1;
  bool va = false, vb = false;
  uint32_t left = 0;
  do {
    const uint32_t c = std::min(ca, cb);
    if (va || vb) {
      o.union_ += c;
      if (va && vb) o.intersection += c;
    }
    ca -= c;
    if (ca == 0 && ia < ka) {
      ca = ra[ia++];
      va = !va;
    }
    cb -= c;
    if (cb == 0 && ib < kb) {
      cb = rb[ib++];
      vb = !vb;
    }
    left = ca + cb;
  } while (left > 0);
  return o;
}

// pycocotools' bbIou for one pair, with its operations in its order (this file is compiled
// without floating-point contraction, see CMakeLists.txt). NaN coordinates pass the overlap
// tests there and here alike (fmin and fmax return the other operand).
double boxIou(const Box& d, double dArea, const Box& g, double gArea, bool crowd) {
  const double iw = std::fmin(d[2] + d[0], g[2] + g[0]) - std::fmax(d[0], g[0]);
  if (iw <= 0) return 0;
  const double ih = std::fmin(d[3] + d[1], g[3] + g[1]) - std::fmax(d[1], g[1]);
  if (ih <= 0) return 0;
  const double intersection = iw * ih;
  return intersection / (crowd ? dArea : dArea + gArea - intersection);
}

// A foreground run [begin, end) in column-major pixel positions.
struct Interval {
  uint32_t begin;
  uint32_t end;
};

// What iou() needs of one mask, computed once per call rather than once per pair.
struct MaskSummary {
  Box box{};
  double boxArea = 0;
  uint32_t area = 0;          // uint32 like pycocotools' rleArea
  bool hasIntervals = false;  // canonical, below 2^32 pixels: its intervals are listed
  size_t firstInterval = 0;
  size_t intervals = 0;
};

// One pass over the runs: checks that they fill the mask (a pair walk would not end
// otherwise), sums the area, lists the foreground intervals of canonical masks.
MaskSummary summarise(const Rle& rle, const char* which, size_t index,
                      std::vector<Interval>& intervals) {
  MaskSummary m;
  m.firstInterval = intervals.size();
  uint64_t pos = 0;
  bool zeroInside = false;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    const uint32_t c = rle.counts[i];
    if (i % 2 == 1) {
      m.area += c;
      intervals.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + c)});
    }
    zeroInside |= c == 0 && i > 0;
    pos += c;
  }
  if (pos != pixelCount(rle.h, rle.w)) {
    throw std::invalid_argument(std::string("iou: ") + which + " " + std::to_string(index) +
                                " has runs adding up to " + std::to_string(pos) +
                                " pixels, its mask is " + std::to_string(rle.h) + "x" +
                                std::to_string(rle.w));
  }
  // Zero-length runs after the first change pycocotools' walk (see overlap()): such masks
  // are walked its way, and so are masks whose positions do not fit in 32 bits.
  m.hasIntervals = !zeroInside && pos <= std::numeric_limits<uint32_t>::max();
  if (!m.hasIntervals) intervals.resize(m.firstInterval);
  m.intervals = intervals.size() - m.firstInterval;
  m.box = toBbox(rle);
  m.boxArea = m.box[2] * m.box[3];
  return m;
}

// Pixels two sorted, disjoint interval lists share within positions [from, to): a merge
// walk that starts with a binary search and stops past `to`.
uint32_t intersectionBetween(std::span<const Interval> a, std::span<const Interval> b,
                             uint32_t from, uint32_t to) {
  auto endsBefore = [from](const Interval& iv) { return iv.end <= from; };
  size_t i = static_cast<size_t>(std::partition_point(a.begin(), a.end(), endsBefore) - a.begin());
  size_t j = static_cast<size_t>(std::partition_point(b.begin(), b.end(), endsBefore) - b.begin());
  uint32_t sum = 0;
  // Which list moves on is a coin flip for the branch predictor: no branches inside.
  while (i < a.size() && j < b.size()) {
    const Interval x = a[i], y = b[j];
    const uint32_t lo = std::max(x.begin, y.begin);
    if (lo >= to) break;
    const uint32_t hi = std::min(x.end, y.end);
    sum += hi > lo ? hi - lo : 0;
    const bool aFirst = x.end < y.end;
    i += aFirst;
    j += !aFirst;
  }
  return sum;
}

void checkCrowdFlags(std::span<const uint8_t> iscrowd, size_t gts) {
  if (iscrowd.size() != gts) {
    throw std::invalid_argument("iou: " + std::to_string(iscrowd.size()) + " iscrowd flags for " +
                                std::to_string(gts) + " ground truths (one each)");
  }
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

std::vector<uint8_t> decodeColumnMajor(const Rle& rle) {
  requireComplete(rle, "decodeColumnMajor");
  std::vector<uint8_t> out(pixelCount(rle.h, rle.w), 0);
  auto pos = out.begin();
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    if (i % 2 == 1) std::fill_n(pos, rle.counts[i], uint8_t{1});
    pos += rle.counts[i];
  }
  return out;
}

Rle rleFromBbox(const Box& box, uint32_t h, uint32_t w) {
  const double xs = box[0], xe = xs + box[2], ys = box[1], ye = ys + box[3];
  const std::array<double, 8> corners = {xs, ys, xs, ye, xe, ye, xe, ys};
  return rleFromPolygon(corners, h, w);
}

std::vector<Rle> rlesFromBboxes(std::span<const Box> boxes, uint32_t h, uint32_t w) {
  std::vector<Rle> rles;
  rles.reserve(boxes.size());
  for (const Box& b : boxes)
    rles.push_back(rleFromBbox(b, h, w));
  return rles;
}

Rle rleFromUncompressed(std::span<const int64_t> counts, uint32_t h, uint32_t w) {
  Rle rle{h, w, {}};
  rle.counts.reserve(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0 || counts[i] > int64_t{std::numeric_limits<uint32_t>::max()}) {
      throw std::invalid_argument("uncompressed RLE: count " + std::to_string(counts[i]) +
                                  " at index " + std::to_string(i) + " is outside 0..4294967295");
    }
    rle.counts.push_back(static_cast<uint32_t>(counts[i]));
  }
  return rle;
}

std::vector<Rle> rlesFromSegmentationList(std::span<const Polygon> lists, uint32_t h, uint32_t w) {
  if (lists.empty()) {
    throw std::invalid_argument("segmentation: an empty polygon list (pycocotools fails on it)");
  }
  const size_t first = lists[0].size();
  if (first == 4) {
    throw std::invalid_argument(
        "segmentation: the first polygon has 4 numbers (2 points); pycocotools takes such a list "
        "for [x, y, w, h] boxes and fails on it");
  }
  if (first < 4) {
    throw std::invalid_argument("segmentation: the first polygon has " + std::to_string(first) +
                                " numbers; pycocotools needs more than 4 to see polygons");
  }
  std::vector<Rle> rles;
  rles.reserve(lists.size());
  for (const Polygon& p : lists)
    rles.push_back(rleFromPolygon(p, h, w));
  return rles;
}

Rle rleFromSegmentationList(std::span<const Polygon> lists, uint32_t h, uint32_t w) {
  return merge(rlesFromSegmentationList(lists, h, w));
}

namespace {

// The mask iou over any way of holding the masks: dt(i) and gt(i) give them by reference.
template <class DtAt, class GtAt>
void maskIou(size_t dts, DtAt dt, size_t gts, GtAt gt, std::span<const uint8_t> iscrowd,
             IouMatrix& out) {
  checkCrowdFlags(iscrowd, gts);
  out.rows = dts;
  out.cols = gts;
  out.values.clear();
  if (dts == 0 || gts == 0) return;

  // Once per mask: its box (pairs whose boxes do not overlap are never walked, as in
  // pycocotools), its area and, for canonical masks, its foreground intervals.
  std::vector<MaskSummary> masks(dts + gts);
  std::vector<Interval> intervals;
  for (size_t d = 0; d < dts; ++d)
    masks[d] = summarise(dt(d), "detection", d, intervals);
  for (size_t g = 0; g < gts; ++g)
    masks[dts + g] = summarise(gt(g), "ground truth", g, intervals);
  const std::span<const MaskSummary> dtMasks(masks.data(), dts);
  const std::span<const MaskSummary> gtMasks(masks.data() + dts, gts);

  out.values.resize(dts * gts);
  for (size_t d = 0; d < dts; ++d) {
    const MaskSummary& dm = dtMasks[d];
    double* row = out.values.data() + d * gts;
    for (size_t g = 0; g < gts; ++g) {
      const MaskSummary& gm = gtMasks[g];
      const bool crowd = iscrowd[g] != 0;
      double o = boxIou(dm.box, dm.boxArea, gm.box, gm.boxArea, crowd);
      if (o > 0) {
        if (dt(d).h != gt(g).h || dt(d).w != gt(g).w) {
          o = -1;
        } else {
          uint32_t intersection = 0, union_ = 0;
          if (dm.hasIntervals && gm.hasIntervals) {
            // Canonical masks: pycocotools' walk counts every pixel, so the intersection
            // within the common columns and the areas give its numbers (mod 2^32 alike).
            const uint64_t h = dt(d).h;
            const auto from = static_cast<uint64_t>(std::max(dm.box[0], gm.box[0])) * h;
            const auto to =
                static_cast<uint64_t>(std::min(dm.box[0] + dm.box[2], gm.box[0] + gm.box[2])) * h;
            intersection =
                intersectionBetween(std::span(intervals).subspan(dm.firstInterval, dm.intervals),
                                    std::span(intervals).subspan(gm.firstInterval, gm.intervals),
                                    static_cast<uint32_t>(from), static_cast<uint32_t>(to));
            union_ = dm.area + gm.area - intersection;
          } else {
            const Overlap ov = overlap(dt(d), gt(g));
            intersection = ov.intersection;
            union_ = ov.union_;
          }
          uint32_t denominator = union_;
          if (intersection == 0) {
            denominator = 1;
          } else if (crowd) {
            denominator = dm.area;
          }
          o = static_cast<double>(intersection) / static_cast<double>(denominator);
        }
      }
      row[g] = o;
    }
  }
}

}  // namespace

void iou(std::span<const Rle> dt, std::span<const Rle> gt, std::span<const uint8_t> iscrowd,
         IouMatrix& out) {
  maskIou(
      dt.size(), [dt](size_t i) -> const Rle& { return dt[i]; }, gt.size(),
      [gt](size_t i) -> const Rle& { return gt[i]; }, iscrowd, out);
}

void iou(std::span<const Rle* const> dt, std::span<const Rle* const> gt,
         std::span<const uint8_t> iscrowd, IouMatrix& out) {
  maskIou(
      dt.size(), [dt](size_t i) -> const Rle& { return *dt[i]; }, gt.size(),
      [gt](size_t i) -> const Rle& { return *gt[i]; }, iscrowd, out);
}

void iou(std::span<const Box> dt, std::span<const Box> gt, std::span<const uint8_t> iscrowd,
         IouMatrix& out) {
  checkCrowdFlags(iscrowd, gt.size());
  out.rows = dt.size();
  out.cols = gt.size();
  out.values.clear();
  if (dt.empty() || gt.empty()) return;
  out.values.resize(dt.size() * gt.size());
  // Per-pair work is a handful of flops: the areas are computed once per box.
  std::vector<double> gtAreas(gt.size());
  for (size_t g = 0; g < gt.size(); ++g)
    gtAreas[g] = gt[g][2] * gt[g][3];
  for (size_t d = 0; d < dt.size(); ++d) {
    const double dArea = dt[d][2] * dt[d][3];
    double* row = out.values.data() + d * gt.size();
    for (size_t g = 0; g < gt.size(); ++g)
      row[g] = boxIou(dt[d], dArea, gt[g], gtAreas[g], iscrowd[g] != 0);
  }
}

IouMatrix iou(std::span<const Rle> dt, std::span<const Rle> gt, std::span<const uint8_t> iscrowd) {
  IouMatrix out;
  iou(dt, gt, iscrowd, out);
  return out;
}

IouMatrix iou(std::span<const Box> dt, std::span<const Box> gt, std::span<const uint8_t> iscrowd) {
  IouMatrix out;
  iou(dt, gt, iscrowd, out);
  return out;
}

}  // namespace mrcnn::dataset
