// The mask API (dataset/mask/rle.h) and the JSON writer on small cases with known answers.
// Expected strings and boxes were computed with pycocotools 2.0.11; the bulk parity check
// against pycocotools lives in test_shapes.cpp.
#include <QTest>
#include <cmath>
#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <sstream>

#include "io/json_writer.h"
#include "dataset/mask/mask_polygons.h"
#include "dataset/mask/rle.h"

using namespace mrcnn::dataset;
using mrcnn::io::JsonWriter;

namespace {

std::string compact(const std::function<void(JsonWriter&)>& write) {
  std::ostringstream out;
  JsonWriter json(out);
  write(json);
  return out.str();
}

}  // namespace

class TestRle : public QObject {
  Q_OBJECT

 private slots:
  // A run crossing from one column into the next makes the box span every row.
  void encodeKnownMask() {
    cv::Mat mask(5, 4, CV_8UC1, cv::Scalar(0));
    mask.at<uint8_t>(1, 1) = mask.at<uint8_t>(2, 1) = mask.at<uint8_t>(4, 1) = 1;
    mask.at<uint8_t>(0, 2) = 7;  // any nonzero value is foreground
    const Rle rle = encodeMask(mask);
    QCOMPARE(rle.counts, (std::vector<uint32_t>{6, 2, 1, 2, 9}));
    QCOMPARE(toCompressedString(rle), std::string("62108"));
    QVERIFY((toBbox(rle) == std::array<double, 4>{1, 0, 2, 5}));
    QCOMPARE(area(rle), uint64_t{4});
    QCOMPARE(cv::countNonZero(decodeMask(rle) != (mask != 0) / 255), 0);
  }

  void columnMajorAndMatAgree() {
    std::mt19937_64 rng(1);
    cv::Mat mask(37, 23, CV_8UC1);
    for (int y = 0; y < mask.rows; ++y) {
      for (int x = 0; x < mask.cols; ++x)
        mask.at<uint8_t>(y, x) = rng() % 3 == 0;
    }
    std::vector<uint8_t> columnMajor;
    for (int x = 0; x < mask.cols; ++x) {
      for (int y = 0; y < mask.rows; ++y)
        columnMajor.push_back(mask.at<uint8_t>(y, x));
    }
    const Rle rle = encodeMask(mask);
    QVERIFY(rle == encodeColumnMajor(columnMajor, 37, 23));
    QCOMPARE(cv::countNonZero(decodeMask(rle) != mask), 0);
    QVERIFY(fromCompressedString(toCompressedString(rle), 37, 23) == rle);
  }

  // Large runs and negative differences (run shorter than two before) survive the code.
  void compressedStringRoundTrip() {
    const Rle rle{1000, 1000, {0, 500000, 3, 17, 499900, 1, 79}};
    const std::string s = toCompressedString(rle);
    QVERIFY(fromCompressedString(s, 1000, 1000) == rle);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fromCompressedString("6{", 5, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fromCompressedString("6P", 5, 4));  // cut
  }

  void emptyAndFullMasks() {
    const Rle empty{3, 4, {12}};
    QVERIFY((toBbox(empty) == std::array<double, 4>{0, 0, 0, 0}));
    QCOMPARE(area(empty), uint64_t{0});
    const Rle full{3, 4, {0, 12}};
    QVERIFY((toBbox(full) == std::array<double, 4>{0, 0, 4, 3}));
    QVERIFY(encodeMask(cv::Mat(3, 4, CV_8UC1, cv::Scalar(1))) == full);
  }

  void polygonsRasteriseLikePycocotools() {
    const Rle square = rleFromPolygon(std::vector<double>{0, 0, 4, 0, 4, 4, 0, 4}, 10, 10);
    QCOMPARE(toCompressedString(square), std::string("04600000l1"));
    QCOMPARE(area(square), uint64_t{16});
    const Rle triangle = rleFromPolygon(std::vector<double>{1.5, -2, 7.25, 3.1, 2, 8.9}, 9, 11);
    QCOMPARE(toCompressedString(triangle), std::string("b081O2N2N1OS1"));
    QVERIFY((toBbox(triangle) == std::array<double, 4>{2, 0, 5, 8}));
    // No points, or all of them off the image: an empty mask, not a crash.
    QVERIFY(rleFromPolygon({}, 5, 5) == (Rle{5, 5, {25}}));
    QCOMPARE(area(rleFromPolygon(std::vector<double>{-9, -9, -5, -9, -5, -5}, 5, 5)), uint64_t{0});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             rleFromPolygon(std::vector<double>{0, 0, NAN, 1, 2, 2}, 5, 5));
  }

  // The fuzzer's find (docs/BENCHMARKS.md, Fuzzing): a polygon reaching millions of pixels
  // outside a small image took seconds (pycocotools walks every point of its boundary).
  // Coordinates that far away, or a boundary far longer than the image needs, are refused at
  // before any walking; a polygon a whole image size outside still rasterises.
  void polygonsFarOutsideTheImageAreRefusedAtOnce() {
    QVERIFY_THROWS_EXCEPTION(
        std::invalid_argument,
        rleFromPolygon(std::vector<double>{0, 0, 2261634.5, 131093.6, 2261634.5, 2261634.5}, 127,
                       65));
    // Within 64 image sizes, but 400 vertices zigzagging 8,000 pixels out and back.
    std::vector<double> zigzag;
    for (int i = 0; i < 400; ++i) {
      zigzag.push_back(i % 2 ? 8000.0 : -8000.0);
      zigzag.push_back(i * 0.25);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rleFromPolygon(zigzag, 100, 100));
    QCOMPARE(area(rleFromPolygon(std::vector<double>{200, 0, 230, 0, 230, 30}, 100, 100)),
             uint64_t{0});
    QVERIFY(area(rleFromPolygon(std::vector<double>{-100, -100, 50, -100, 50, 50}, 100, 100)) > 0);
  }

  void mergeUnionAndIntersection() {
    std::mt19937_64 rng(2);
    cv::Mat a(19, 13, CV_8UC1), b(19, 13, CV_8UC1);
    for (int y = 0; y < a.rows; ++y) {
      for (int x = 0; x < a.cols; ++x) {
        a.at<uint8_t>(y, x) = rng() % 4 == 0;
        b.at<uint8_t>(y, x) = rng() % 2 == 0;
      }
    }
    const std::vector<Rle> both = {encodeMask(a), encodeMask(b)};
    QVERIFY(merge(both) == encodeMask(a | b));
    QVERIFY(merge(both, /*intersect=*/true) == encodeMask(a & b));
    const std::vector<Rle> mismatched = {encodeMask(a), Rle{2, 2, {4}}};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, merge(mismatched));
  }

  void decodeRejectsRunsThatDoNotFillTheMask() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodeMask(Rle{3, 3, {4, 4}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodeMask(Rle{3, 3, {4, 4, 4}}));
  }

  void jsonWriterOutput() {
    const std::string text = compact([](JsonWriter& j) {
      j.beginObject().key("s").value("a\"b\\c\n\x01\u00e9").key("n").value(nullptr);
      j.key("t").value(true).key("i").value(-3).key("u").value(uint64_t{18446744073709551615u});
      j.key("d").beginArray().value(12.0).value(0.1).value(-2.5e-300).value(1e16).endArray();
      j.key("e").beginObject().endObject().key("f").beginArray().endArray().endObject();
    });
    const std::string expected =
        "{\"s\":\"a\\\"b\\\\c\\n\\u0001\u00e9\",\"n\":null,\"t\":true,\"i\":-3,"
        "\"u\":18446744073709551615,\"d\":[12.0,0.1,-2.5e-300,1e+16],\"e\":{},\"f\":[]}";
    QCOMPARE(text, expected);
  }

  // Raw pieces in an array, small ones through the buffer and large ones (64 KiB and more)
  // straight to the stream: the same text, commas and order either way.
  void jsonWriterRawPieces() {
    const std::string big = "{\"a\":\"" + std::string(70000, 'x') + "\"},{\"b\":1}";
    const std::string text = compact([&](JsonWriter& j) {
      j.beginObject().key("k").beginArray().raw("1").raw(big).raw("2,3").endArray();
      j.key("z").raw(big.substr(0, big.find(',')));
      j.endObject();
    });
    QCOMPARE(text, "{\"k\":[1," + big + ",2,3],\"z\":" + big.substr(0, big.find(',')) + "}");
  }

  // A mask as polygons for editing: each region's outline, largest first, which drawn again
  // covers the region; specks are left out.
  void maskPolygonsTraceEachRegion() {
    cv::Mat m = cv::Mat::zeros(60, 80, CV_8UC1);
    cv::rectangle(m, cv::Rect(5, 5, 10, 8), cv::Scalar(1), cv::FILLED);
    cv::circle(m, cv::Point(50, 30), 15, cv::Scalar(1), cv::FILLED);
    m.at<uint8_t>(55, 75) = 1;  // a speck
    const Rle rle = mrcnn::dataset::encodeMask(m);
    const std::vector<Polygon> polygons = mrcnn::dataset::polygonsFromMask(rle);
    QCOMPARE(polygons.size(), size_t{2});
    for (size_t k = 0; k < 2; ++k) {
      const Rle drawn = mrcnn::dataset::rleFromPolygon(polygons[k], 60, 80);
      const Rle region = mrcnn::dataset::merge(std::vector<Rle>{rle, drawn}, true);
      QVERIFY2(static_cast<double>(mrcnn::dataset::area(region)) >= 0.8 * static_cast<double>(mrcnn::dataset::area(drawn)),
               qPrintable(QString::number(k)));
    }
    const auto box = mrcnn::dataset::toBbox(mrcnn::dataset::rleFromPolygon(polygons[0], 60, 80));
    QVERIFY2(box[0] > 30 && box[2] > 25, qPrintable(QString::number(box[0])));  // the circle first
    QVERIFY(mrcnn::dataset::polygonsFromMask(mrcnn::dataset::encodeMask(cv::Mat::zeros(5, 5, CV_8UC1))).empty());
  }

  void jsonWriterRejectsMisuse() {
    std::ostringstream out;
    JsonWriter j(out);
    j.beginObject();
    QVERIFY_THROWS_EXCEPTION(std::logic_error, j.value(1));  // member without a key
    QVERIFY_THROWS_EXCEPTION(std::logic_error, j.endArray());
    j.key("x");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, j.value(std::nan("")));
    QVERIFY(!j.complete());
  }
};

QTEST_GUILESS_MAIN(TestRle)
#include "test_rle.moc"
