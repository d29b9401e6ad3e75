// The random cases of the mask API's parity run (randomCasesAgreeWithPycocotools): seeded
// masks, strings, polygons, boxes, uncompressed RLEs, merges and IoU sets, each written with
// our results for mask_api_check.py to recompute with pycocotools. The fixture: mask_api_test.h.
#include <QTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "tests/dataset/mask_api_test.h"

namespace {

// ---- Random inputs ----

// A mask of one of several kinds: noise, rectangles, ellipses, empty, full, thin lines.
cv::Mat randomMask(Random& r, int h, int w) {
  cv::Mat m(h, w, CV_8UC1, cv::Scalar(0));
  if (h == 0 || w == 0) return m;
  switch (r.pick(7)) {
    case 0: {
      const double p = r.uniform(0, 1);
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x)
          m.at<uint8_t>(y, x) = r.chance(p);
      }
      break;
    }
    case 1:
      for (int i = 1 + r.pick(4); i > 0; --i) {
        const int x = r.pick(w), y = r.pick(h);
        m(cv::Rect(x, y, 1 + r.pick(w - x), 1 + r.pick(h - y))).setTo(1);
      }
      break;
    case 2:
      for (int i = 1 + r.pick(3); i > 0; --i) {
        cv::ellipse(m, cv::Point(r.pick(w), r.pick(h)),
                    cv::Size(1 + r.pick(w / 2 + 1), 1 + r.pick(h / 2 + 1)), r.uniform(0, 180), 0,
                    360, cv::Scalar(1), cv::FILLED);
      }
      break;
    case 3:
      break;  // empty
    case 4:
      m.setTo(1);
      break;
    case 5:
      m.at<uint8_t>(r.pick(h), r.pick(w)) = 1;
      break;
    default:
      if (r.chance(0.5)) {
        m.col(r.pick(w)).setTo(1);
      } else {
        m.row(r.pick(h)).setTo(1);
      }
  }
  return m;
}

int randomSide(Random& r, int small, int large) {
  if (r.chance(0.03)) return 0;
  return r.chance(0.1) ? 1 + r.pick(large) : 1 + r.pick(small);
}

// The same mask with zero-length runs put inside (a run split in two around a 0, or a
// "0, 0" pair inserted): valid input that pycocotools walks in its own way.
Rle withZeroRuns(Random& r, Rle rle) {
  for (int k = r.pick(3); k > 0 && !rle.counts.empty(); --k) {
    const size_t i = static_cast<size_t>(r.pick(static_cast<int>(rle.counts.size())));
    const uint32_t c = rle.counts[i];
    const uint32_t first = c == 0 ? 0 : static_cast<uint32_t>(r.pick(static_cast<int>(c) + 1));
    if (r.chance(0.5)) {
      rle.counts[i] = first;
      rle.counts.insert(rle.counts.begin() + static_cast<std::ptrdiff_t>(i) + 1, {0, c - first});
    } else {
      rle.counts.insert(rle.counts.begin() + static_cast<std::ptrdiff_t>(i) + 1, {0, 0});
    }
  }
  return rle;
}

// A random compressed string built character by character: numbers of 1 to 6 characters
// of either sign and 7-character positive ones (which pycocotools also decodes exactly,
// see fromCompressedString), so runs may be huge, wrap, and not add up to h * w.
std::string randomCountsString(Random& r) {
  std::string s;
  for (int n = r.pick(r.chance(0.2) ? 60 : 12); n > 0; --n) {
    const int length = r.chance(0.05) ? 7 : 1 + (r.chance(0.7) ? r.pick(2) : r.pick(6));
    for (int k = 0; k < length; ++k) {
      int c = r.pick(32);
      if (k + 1 < length) {
        c |= 0x20;
      } else if (length == 7) {
        c &= 0x0f;
      }
      s.push_back(static_cast<char>(48 + c));
    }
  }
  return s;
}

// Polygon lists meant to hit the rasteriser's and frPyObjects' corners: points off the
// image, fewer than 3 points, odd lengths, collinear and repeated points, 4-number first
// lists (the box pitfall), empty lists.
std::vector<Polygon> randomPolygonList(Random& r, int h, int w) {
  std::vector<Polygon> lists;
  // On a 0-wide image pycocotools' merge of several polygons overflows its buffer: one only.
  const int parts = w == 0 && h > 0 ? 1 : (r.chance(0.3) ? 2 + r.pick(4) : 1);
  for (int p = 0; p < parts; ++p) {
    int points = 3 + r.pick(r.chance(0.2) ? 30 : 6);
    if (r.chance(0.15)) points = r.pick(3);  // 0, 1 or 2 points
    const double cx = r.uniform(-0.3, 1.3) * w, cy = r.uniform(-0.3, 1.3) * h;
    const double size = r.uniform(0.5, 1.5) * std::max(1, std::max(w, h)) / 2;
    const int kind = r.pick(6);
    Polygon xy;
    for (int i = 0; i < points; ++i) {
      double x = 0, y = 0;
      switch (kind) {
        case 0:
          x = r.uniform(-5, w + 5.0);
          y = r.uniform(-5, h + 5.0);
          break;
        case 1:
          x = (r.pick(10 * w + 40) - 20) / 10.0;  // the 0.1 grid, where 5x + .5 is tight
          y = (r.pick(10 * h + 40) - 20) / 10.0;
          break;
        case 2:
          x = cx + i * size / 4;  // collinear: zero area
          y = cy + i * size / 7;
          break;
        case 3:
          x = xy.size() >= 2 && r.chance(0.5) ? xy[xy.size() - 2] : r.uniform(-2, w + 2.0);
          y = xy.size() >= 2 && r.chance(0.5) ? xy[xy.size() - 1] : r.uniform(-2, h + 2.0);
          break;
        case 4:
          x = cx + r.uniform(0, 0.9);  // sub-pixel
          y = cy + r.uniform(0, 0.9);
          break;
        default: {
          const double a = 6.283185307179586 * i / points, rad = size * r.uniform(0.3, 1);
          x = cx + rad * std::cos(a);
          y = cy + rad * std::sin(a);
        }
      }
      xy.push_back(x);
      xy.push_back(y);
    }
    if (r.chance(0.05) && !xy.empty()) xy.push_back(r.uniform(0, w));  // odd length
    lists.push_back(std::move(xy));
  }
  return lists;
}

Box randomBox(Random& r, double scale) {
  auto coordinate = [&] { return r.chance(0.3) ? r.pick(20) - 4.0 : r.uniform(-0.2, 1.2) * scale; };
  auto extent = [&]() -> double {
    switch (r.pick(8)) {
      case 0:
        return 0;
      case 1:
        return -r.uniform(0, scale / 4);
      case 2:
        return r.uniform(0, 1e-6);
      case 3:
        return r.uniform(0, 1e9);
      case 4:
        return 1 + r.pick(5);
      default:
        return r.uniform(0, scale / 2);
    }
  };
  return {coordinate(), coordinate(), extent(), extent()};
}

}  // namespace

// Random binary masks: encode, string, decode, area, toBbox. Keeps the masks for merges
// and IoU sets.
void TestMaskApi::writeMasks(JsonWriter& json, int count, Counts& n) {
  Random r(1);
  json.key("masks").beginArray();
  for (int i = 0; i < count; ++i) {
    const int h = randomSide(r, 40, 200), w = randomSide(r, 40, 200);
    const cv::Mat mask = randomMask(r, h, w);
    const Rle rle = encodeMask(mask);
    std::string bits;  // column-major, as pycocotools' Fortran-ordered arrays
    std::vector<uint8_t> columnMajor;
    for (int x = 0; x < w; ++x) {
      for (int y = 0; y < h; ++y) {
        bits.push_back(mask.at<uint8_t>(y, x) ? '1' : '0');
        columnMajor.push_back(mask.at<uint8_t>(y, x));
      }
    }
    QVERIFY(encodeColumnMajor(columnMajor, static_cast<uint32_t>(h), static_cast<uint32_t>(w)) ==
            rle);
    QVERIFY(decodeColumnMajor(rle) == columnMajor);
    const cv::Mat decoded = decodeMask(rle);
    QCOMPARE(decoded.rows, h);
    if (!mask.empty()) QCOMPARE(cv::countNonZero(decoded != mask), 0);
    QVERIFY(fromCompressedString(toCompressedString(rle), rle.h, rle.w) == rle);
    json.beginObject().key("h").value(h).key("w").value(w).key("bits").value(bits);
    json.key("counts").value(toCompressedString(rle));
    writeAreaAndBox(json, rle);
    json.endObject();
    masks_.push_back(rle);
    ++n.masks;
  }
  json.endArray();
}

// Random valid strings: decode and re-encode, area, toBbox, on sizes they may not fit.
void TestMaskApi::writeStrings(JsonWriter& json, int count, Counts& n) {
  Random r(2);
  json.key("strings").beginArray();
  for (int i = 0; i < count; ++i) {
    // h >= 1: pycocotools' toBbox divides by h (a 0-high mask with runs crashes it).
    const auto h = static_cast<uint32_t>(1 + r.pick(r.chance(0.2) ? 100000 : 50));
    const auto w = static_cast<uint32_t>(r.pick(50));
    std::string s;
    Rle rle;
    do {
      s = randomCountsString(r);
      rle = fromCompressedString(s, h, w);
      // pycocotools' rleToString writes into 6 bytes per number, the end mark included:
      // more than that (7-character numbers) overflows its heap buffer.
    } while (toCompressedString(rle).size() + 1 > 6 * rle.counts.size() && !s.empty());
    json.beginObject().key("h").value(h).key("w").value(w).key("counts").value(s);
    json.key("recoded").value(toCompressedString(rle));
    writeAreaAndBox(json, rle);
    json.endObject();
    ++n.strings;
  }
  json.endArray();
}

// Random polygon lists through frPyObjects' dispatch, each list's mask and their union.
void TestMaskApi::writePolygons(JsonWriter& json, int count, Counts& n) {
  Random r(3);
  json.key("polygons").beginArray();
  for (int i = 0; i < count; ++i) {
    const int h = randomSide(r, 40, 300), w = randomSide(r, 40, 300);
    const std::vector<Polygon> lists = randomPolygonList(r, h, w);
    json.beginObject().key("h").value(h).key("w").value(w).key("lists").beginArray();
    for (const Polygon& p : lists) {
      json.beginArray();
      for (double v : p)
        json.value(v);
      json.endArray();
    }
    json.endArray();
    std::vector<Rle> rles;
    try {
      rles = rlesFromSegmentationList(lists, static_cast<uint32_t>(h), static_cast<uint32_t>(w));
    } catch (const std::invalid_argument&) {
      json.key("error").value(true).endObject();
      ++n.polygons;
      continue;
    }
    json.key("error").value(false).key("counts").beginArray();
    for (const Rle& rle : rles)
      json.value(toCompressedString(rle));
    const Rle merged =
        rleFromSegmentationList(lists, static_cast<uint32_t>(h), static_cast<uint32_t>(w));
    json.endArray().key("merged").value(toCompressedString(merged));
    writeAreaAndBox(json, merged);
    json.endObject();
    ++n.polygons;
    if (rles.size() > 1 && h > 0) polygonMasks_.push_back(merged);
  }
  json.endArray();
}

// Boxes to masks (frBbox): fractional, negative, zero-size, off the image.
void TestMaskApi::writeBoxMasks(JsonWriter& json, int count, Counts& n) {
  Random r(4);
  json.key("box_masks").beginArray();
  for (int i = 0; i < count; ++i) {
    const int h = randomSide(r, 40, 300), w = randomSide(r, 40, 300);
    std::vector<Box> boxes;
    for (int b = 1 + r.pick(4); b > 0; --b) {
      Box box = randomBox(r, std::max(h, w) + 1);
      box[2] = std::min(box[2], 1000.0);  // no billion-pixel polygons
      box[3] = std::min(box[3], 1000.0);
      boxes.push_back(box);
    }
    json.beginObject().key("h").value(h).key("w").value(w).key("boxes").beginArray();
    for (const Box& b : boxes)
      writeBox(json, b);
    json.endArray().key("counts").beginArray();
    for (const Rle& rle : rlesFromBboxes(boxes, static_cast<uint32_t>(h), static_cast<uint32_t>(w)))
      json.value(toCompressedString(rle));
    json.endArray().endObject();
    ++n.boxes;
  }
  json.endArray();
}

// Uncompressed RLEs as COCO's crowd regions store them, with zero-length runs, runs that
// do not fill the mask and values outside uint32 (an error on both sides).
void TestMaskApi::writeUncompressed(JsonWriter& json, int count, Counts& n) {
  Random r(5);
  json.key("uncompressed").beginArray();
  for (int i = 0; i < count; ++i) {
    const auto h = static_cast<uint32_t>(1 + r.pick(60)), w = static_cast<uint32_t>(r.pick(60));
    std::vector<int64_t> counts;
    const int64_t total = int64_t{h} * w;
    int64_t left = total;
    while (left > 0 && counts.size() < 200) {
      const int64_t run = r.chance(0.1) ? 0 : std::min<int64_t>(left, 1 + r.pick(30));
      counts.push_back(run);
      left -= run;
    }
    if (r.chance(0.1)) counts.push_back(r.pick(1 << 28));  // does not add up any more
    if (r.chance(0.03))
      counts[static_cast<size_t>(r.pick(static_cast<int>(counts.size())))] =
          r.chance(0.5) ? -1 - r.pick(9) : (int64_t{1} << 32) + r.pick(9);
    // pycocotools takes the size from the object; the image size it is given is unused.
    json.beginObject().key("size").beginArray().value(h).value(w).endArray();
    json.key("counts").beginArray();
    for (int64_t c : counts)
      json.value(c);
    json.endArray();
    try {
      const Rle rle = rleFromUncompressed(counts, h, w);
      json.key("error").value(false).key("out").value(toCompressedString(rle));
      writeAreaAndBox(json, rle);
    } catch (const std::invalid_argument&) {
      json.key("error").value(true);
    }
    json.endObject();
    ++n.uncompressed;
  }
  json.endArray();
}

// Union and intersection of 1 to 5 masks of one size (encoded masks and polygon unions).
void TestMaskApi::writeMerges(JsonWriter& json, int count, Counts& n) {
  Random r(6);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const Rle*>> bySize;
  for (const std::vector<Rle>* pool : {&masks_, &polygonMasks_}) {
    for (const Rle& rle : *pool)
      bySize[{rle.h, rle.w}].push_back(&rle);
  }
  std::vector<const std::vector<const Rle*>*> groups;
  for (const auto& [size, rles] : bySize) {
    if (rles.size() >= 2) groups.push_back(&rles);
  }
  QVERIFY(groups.size() > 20);
  json.key("merges").beginArray();
  for (int i = 0; i < count; ++i) {
    const auto& group = *groups[static_cast<size_t>(r.pick(static_cast<int>(groups.size())))];
    std::vector<Rle> inputs;
    for (int k = 1 + r.pick(5); k > 0; --k)
      inputs.push_back(*group[static_cast<size_t>(r.pick(static_cast<int>(group.size())))]);
    json.beginObject().key("inputs").beginArray();
    for (const Rle& rle : inputs)
      writeRle(json, rle);
    json.endArray().key("union").value(toCompressedString(merge(inputs)));
    json.key("intersection").value(toCompressedString(merge(inputs, /*intersect=*/true)));
    json.endObject();
    ++n.merges;
  }
  json.endArray();
}

// dt x gt sets of masks with random crowd flags: random, empty, full, identical, disjoint,
// other-sized and non-canonical masks.
void TestMaskApi::writeMaskIous(JsonWriter& json, int count, Counts& n) {
  Random r(7);
  json.key("mask_ious").beginArray();
  for (int i = 0; i < count; ++i) {
    const auto h = static_cast<uint32_t>(1 + r.pick(r.chance(0.1) ? 120 : 24));
    const auto w = static_cast<uint32_t>(1 + r.pick(r.chance(0.1) ? 120 : 24));
    std::vector<Rle> pool;
    for (int k = 2 + r.pick(4); k > 0; --k) {
      pool.push_back(encodeMask(randomMask(r, static_cast<int>(h), static_cast<int>(w))));
    }
    pool.push_back(Rle{h, w, {h * w}});
    pool.push_back(Rle{h, w, {0, h * w}});
    cv::Mat left(static_cast<int>(h), static_cast<int>(w), CV_8UC1, cv::Scalar(0));
    left.colRange(0, static_cast<int>(w + 1) / 2).setTo(1);
    pool.push_back(encodeMask(left));
    pool.push_back(encodeMask(left == 0));
    // The same non-canonical mask on both sides is where pycocotools' walk stops early.
    for (size_t k = 0, size = pool.size(); k < size; ++k) {
      if (r.chance(0.2)) pool.push_back(withZeroRuns(r, pool[k]));
    }
    auto draw = [&]() -> Rle {
      if (r.chance(0.05)) {  // another size: -1 where the boxes overlap
        return encodeMask(randomMask(r, static_cast<int>(w), static_cast<int>(h)));
      }
      const Rle& base = pool[static_cast<size_t>(r.pick(static_cast<int>(pool.size())))];
      return r.chance(0.1) ? withZeroRuns(r, base) : base;
    };
    std::vector<Rle> dt, gt;
    std::vector<uint8_t> crowd;
    for (int k = r.pick(7); k > 0; --k)
      dt.push_back(draw());
    for (int k = r.pick(7); k > 0; --k) {
      gt.push_back(draw());
      crowd.push_back(r.chance(0.3) ? static_cast<uint8_t>(1 + r.pick(255)) : 0);
    }
    if (r.chance(0.2) && !dt.empty()) {
      gt.push_back(dt[0]);
      crowd.push_back(0);
    }
    json.beginObject();
    for (const auto& [key, rles] : {std::pair{"dt", &dt}, std::pair{"gt", &gt}}) {
      json.key(key).beginArray();
      for (const Rle& rle : *rles)
        writeRle(json, rle);
      json.endArray();
    }
    json.key("iscrowd").beginArray();
    for (uint8_t c : crowd)
      json.value(c);
    const IouMatrix m = iou(dt, gt, crowd);
    std::vector<const Rle*> dtPointers, gtPointers;
    for (const Rle& rle : dt)
      dtPointers.push_back(&rle);
    for (const Rle& rle : gt)
      gtPointers.push_back(&rle);
    IouMatrix viaPointers;
    iou(dtPointers, gtPointers, crowd, viaPointers);
    QVERIFY(viaPointers.values == m.values && viaPointers.rows == m.rows);
    json.endArray().key("iou");
    writeMatrix(json, m);
    json.endObject();
    ++n.maskIous;
  }
  json.endArray();
}

void TestMaskApi::writeBoxIous(JsonWriter& json, int count, Counts& n) {
  Random r(8);
  json.key("box_ious").beginArray();
  for (int i = 0; i < count; ++i) {
    const double scale = r.chance(0.2) ? r.uniform(0, 1e6) : r.uniform(1, 100);
    std::vector<Box> dt, gt;
    std::vector<uint8_t> crowd;
    for (int k = r.pick(9); k > 0; --k)
      dt.push_back(r.chance(0.1) && !dt.empty() ? dt.back() : randomBox(r, scale));
    for (int k = r.pick(9); k > 0; --k) {
      gt.push_back(r.chance(0.15) && !dt.empty()
                       ? dt[static_cast<size_t>(r.pick(static_cast<int>(dt.size())))]
                       : randomBox(r, scale));
      crowd.push_back(r.chance(0.3) ? static_cast<uint8_t>(1 + r.pick(255)) : 0);
    }
    json.beginObject();
    for (const auto& [key, boxes] : {std::pair{"dt", &dt}, std::pair{"gt", &gt}}) {
      json.key(key).beginArray();
      for (const Box& b : *boxes)
        writeBox(json, b);
      json.endArray();
    }
    json.key("iscrowd").beginArray();
    for (uint8_t c : crowd)
      json.value(c);
    json.endArray().key("iou");
    writeMatrix(json, iou(dt, gt, crowd));
    json.endObject();
    ++n.boxIous;
  }
  json.endArray();
}
