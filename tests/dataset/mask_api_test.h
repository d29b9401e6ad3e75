// What the mask API tests share (test_mask_api.cpp: small cases with known answers, malformed
// input, and the parity runs of tinycoco and of the random cases against pycocotools through
// mask_api_check.py; test_mask_api_random.cpp: the random cases, written with our results for
// mask_api_check.py to recompute): the fixture and its helpers. iou()'s benchmark against
// pycocotools is a driver of its own: bench/bench_mask_api.cpp, run by scripts/bench_mask_api.py.
#pragma once

#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <cstdint>
#include <random>
#include <vector>

#include "io/json_writer.h"
#include "dataset/mask/rle.h"

using namespace mrcnn::dataset;
using mrcnn::io::JsonWriter;

namespace mask_api_test {

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  // 0 .. n-1 (0 when n <= 0).
  int pick(int n) { return n <= 0 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  }
  bool chance(double p) { return uniform(0, 1) < p; }

 private:
  std::mt19937_64 rng_;
};

// ---- Writing cases ----

inline void writeRle(JsonWriter& json, const Rle& rle) {
  json.beginObject().key("size").beginArray().value(rle.h).value(rle.w).endArray();
  json.key("counts").value(toCompressedString(rle)).endObject();
}

inline void writeBox(JsonWriter& json, const Box& box) {
  json.beginArray();
  for (double v : box)
    json.value(v);
  json.endArray();
}

inline void writeMatrix(JsonWriter& json, const IouMatrix& m) {
  json.beginArray();
  for (size_t d = 0; d < m.rows && m.cols > 0; ++d) {
    json.beginArray();
    for (size_t g = 0; g < m.cols; ++g)
      json.value(m.at(d, g));
    json.endArray();
  }
  json.endArray();
}

// area, bbox of one mask: the members every case carries.
inline void writeAreaAndBox(JsonWriter& json, const Rle& rle) {
  json.key("area").value(area(rle)).key("bbox");
  writeBox(json, toBbox(rle));
}

// Cases written by each kind, to compare with the oracle's counts.
struct Counts {
  int masks = 0, strings = 0, polygons = 0, boxes = 0, uncompressed = 0, merges = 0;
  int maskIous = 0, boxIous = 0;
};

}  // namespace mask_api_test

using namespace mask_api_test;  // NOLINT: the tests' own helpers

class TestMaskApi : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void crowdRuleAndEmptyMasks();
  void boxIouRules();
  void zeroLengthRunsWalkedLikePycocotools();
  void incompleteMasksAreRejected();
  void frPyObjectsDispatch();
  void malformedStringsThrow();
  void tinycocoAgreesWithPycocotools();
  void randomCasesAgreeWithPycocotools();

 private:
  void writeMasks(JsonWriter& json, int count, Counts& n);
  void writeStrings(JsonWriter& json, int count, Counts& n);
  void writePolygons(JsonWriter& json, int count, Counts& n);
  void writeBoxMasks(JsonWriter& json, int count, Counts& n);
  void writeUncompressed(JsonWriter& json, int count, Counts& n);
  void writeMerges(JsonWriter& json, int count, Counts& n);
  void writeMaskIous(JsonWriter& json, int count, Counts& n);
  void writeBoxIous(JsonWriter& json, int count, Counts& n);

  QTemporaryDir dir_;
  QString python_;
  std::vector<Rle> masks_, polygonMasks_;
};
