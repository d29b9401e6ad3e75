// The label check's mistake finder (review/mistake_finder.h) on tinycoco's real annotations:
// a model that agrees with every annotation (made-up detections: each annotation's mask, its
// box a little off as a real model's is), then one mistake of each kind planted into the
// annotations; each planted mistake must come out on top, as its kind, with its suggestion.
// Then the task on files: mistakes.json, events, the printed table, and bad input.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <sstream>

#include "dataset/coco/coco.h"
#include "eval/results_json.h"
#include "io/json_writer.h"
#include "review/mistakes_json.h"
#include "tests/common/process_run.h"

using mrcnn::dataset::Box;
using mrcnn::dataset::Rle;
using mrcnn::eval::Detection;
using mrcnn::eval::GroundTruth;
using mrcnn::review::Mistake;
using mrcnn::review::MistakeKind;
using mrcnn::testing::binDir;
using mrcnn::testing::runProcess;

namespace {

QString tinycocoVal() {
  const QString shared = qEnvironmentVariable("MRCNN_SHARED_DIR");
  return shared + "/data/tinycoco/annotations/instances_val2017.json";
}

// The mask moved by (dx, dy) pixels (what falls off the image is lost).
Rle shifted(const Rle& rle, int dx, int dy) {
  const cv::Mat mask = mrcnn::dataset::decodeMask(rle);
  cv::Mat out = cv::Mat::zeros(mask.size(), mask.type());
  const cv::Mat m = (cv::Mat_<double>(2, 3) << 1, 0, dx, 0, 1, dy);
  cv::warpAffine(mask, out, m, mask.size(), cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
  return mrcnn::dataset::encodeMask(out);
}

// The finder on `in` lists one finding: the detection at `box`, missing.
void expectOnlyMissingAt(const mrcnn::review::FinderInput& in, const Box& box);

struct Planted {
  mrcnn::review::FinderInput input;
  int64_t missing_image = 0;
  Box missing_box{};
  int64_t wrong_class_id = 0, wrong_class_true = 0;
  int64_t localization_id = 0;
  Box localization_true_box{};
  int64_t spurious_id = 0;
  int64_t duplicate_id = 0;
};

// The largest non-crowd annotation of each image, biggest first: clear cases to plant on.
std::vector<size_t> largestPerImage(const std::vector<GroundTruth>& gts) {
  std::map<int64_t, size_t> best;
  for (size_t i = 0; i < gts.size(); ++i) {
    if (gts[i].iscrowd) continue;
    auto [it, added] = best.try_emplace(gts[i].image_id, i);
    if (!added && gts[i].area > gts[it->second].area) it->second = i;
  }
  std::vector<size_t> out;
  for (const auto& [image, i] : best) out.push_back(i);
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) { return gts[a].area > gts[b].area; });
  return out;
}

// A model that agrees with every annotation: a detection on each, its box 3% of its size
// off, plus unsure detections on the background (below the confidence that counts alone).
mrcnn::review::FinderInput agreeing(const mrcnn::dataset::CocoDataset& coco, bool masks) {
  const mrcnn::eval::EvalSet set =
      mrcnn::eval::groundTruthSet(coco, masks ? mrcnn::eval::IouType::Segm : mrcnn::eval::IouType::Bbox);
  mrcnn::review::FinderInput in;
  in.image_ids = set.image_ids;
  in.masks = masks;
  for (const auto& c : coco.categories()) in.category_names.emplace_back(c.id, c.name);
  in.annotations = set.ground_truths;
  int64_t next = 1;
  for (const GroundTruth& g : in.annotations) {
    if (g.iscrowd) continue;
    Detection d;
    d.id = next++;
    d.image_id = g.image_id;
    d.category_id = g.category_id;
    d.bbox = {g.bbox[0] + 0.03 * g.bbox[2], g.bbox[1], g.bbox[2], g.bbox[3]};
    d.score = 0.9 - 0.001 * static_cast<double>(next % 50);
    d.mask = g.mask;
    in.detections.push_back(d);
  }
  for (const int64_t image : set.image_ids) {
    Detection d;
    d.id = next++;
    d.image_id = image;
    d.category_id = in.annotations.front().category_id;
    d.bbox = {1, 1, 30, 30};
    d.score = 0.2;
    const auto [h, w] = mrcnn::eval::imageSizes(coco).at(image);
    if (masks) d.mask = mrcnn::dataset::rleFromBbox(d.bbox, h, w);
    in.detections.push_back(d);
  }
  return in;
}

Planted plant(const mrcnn::dataset::CocoDataset& coco, bool masks) {
  Planted p;
  p.input = agreeing(coco, masks);
  std::vector<GroundTruth> gts = std::move(p.input.annotations);
  const std::vector<size_t> big = largestPerImage(gts);
  if (big.size() < 5) throw std::runtime_error("tinycoco has fewer than 5 annotated images");
  // missing: an annotation gone, its detection stays.
  const GroundTruth missing = gts[big[0]];
  p.missing_image = missing.image_id;
  p.missing_box = missing.bbox;
  p.missing_box[0] += 0.03 * missing.bbox[2];
  // wrong_class: another category on it.
  GroundTruth& wrong = gts[big[1]];
  p.wrong_class_id = wrong.id;
  p.wrong_class_true = wrong.category_id;
  for (const auto& c : coco.categories()) {
    if (c.id != wrong.category_id) {
      wrong.category_id = c.id;
      break;
    }
  }
  // localization: box and mask moved by 35% of the width.
  GroundTruth& loose = gts[big[2]];
  p.localization_id = loose.id;
  p.localization_true_box = {loose.bbox[0] + 0.03 * loose.bbox[2], loose.bbox[1], loose.bbox[2],
                             loose.bbox[3]};
  const int dx = static_cast<int>(0.35 * loose.bbox[2]);
  loose.bbox[0] += dx;
  if (masks) loose.mask = shifted(loose.mask, dx, 0);
  // duplicate: the same object drawn twice.
  int64_t max_id = 0;
  for (const GroundTruth& g : gts) max_id = std::max(max_id, g.id);
  GroundTruth twice = gts[big[3]];
  twice.id = ++max_id;
  p.duplicate_id = twice.id;
  // spurious: a box where there is nothing (a corner of the image the model leaves empty).
  GroundTruth ghost = gts[big[4]];
  ghost.id = ++max_id;
  const auto [h, w] = mrcnn::eval::imageSizes(coco).at(ghost.image_id);
  ghost.bbox = {static_cast<double>(w) - 41, static_cast<double>(h) - 41, 40, 40};
  if (masks) ghost.mask = mrcnn::dataset::rleFromBbox(ghost.bbox, h, w);
  ghost.area = 1600;
  p.spurious_id = ghost.id;

  gts.erase(gts.begin() + static_cast<std::ptrdiff_t>(big[0]));
  gts.push_back(twice);
  gts.push_back(ghost);
  p.input.annotations = std::move(gts);
  return p;
}

bool near(const Box& a, const Box& b) {
  for (int k = 0; k < 4; ++k)
    if (std::abs(a[k] - b[k]) > 1e-6) return false;
  return true;
}

}  // namespace

class MistakeFinderTest : public QObject {
  Q_OBJECT

  void plantedMistakesComeFirst(bool masks) {
    const mrcnn::dataset::CocoDataset coco = mrcnn::dataset::loadCoco(tinycocoVal().toStdString());
    const Planted p = plant(coco, masks);
    const mrcnn::review::FinderResult found = mrcnn::review::findMistakes(p.input);
    QVERIFY2(found.mistakes.size() >= 5, qPrintable(QString::number(found.mistakes.size())));
    // The model agrees with the rest: its typical overlap is its 3% box offset's.
    QVERIFY2(found.typical_overlap > 0.9 && found.typical_overlap < 0.96,
             qPrintable(QString::number(found.typical_overlap)));
    std::map<MistakeKind, const Mistake*> first;
    for (size_t i = 0; i < 5; ++i) first.emplace(found.mistakes[i].kind, &found.mistakes[i]);
    QCOMPARE(first.size(), size_t{5});  // one of each kind on top
    // Nothing else comes close: the next finding scores well below the planted ones.
    if (found.mistakes.size() > 5) QVERIFY(found.mistakes[5].score < 0.5 * found.mistakes[4].score);

    const Mistake& missing = *first.at(MistakeKind::kMissing);
    QCOMPARE(missing.image_id, p.missing_image);
    QVERIFY(!missing.annotation_id);
    QVERIFY(missing.suggestion && near(missing.suggestion->bbox, p.missing_box));
    QCOMPARE(missing.suggestion->mask.has_value(), masks);

    const Mistake& wrong = *first.at(MistakeKind::kWrongClass);
    QCOMPARE(wrong.annotation_id.value_or(-1), p.wrong_class_id);
    QVERIFY(wrong.suggestion);
    QCOMPARE(wrong.suggestion->category_id, p.wrong_class_true);
    QVERIFY(!wrong.suggestion->mask);  // the class changes; the shape stays

    const Mistake& loose = *first.at(MistakeKind::kLocalization);
    QCOMPARE(loose.annotation_id.value_or(-1), p.localization_id);
    QVERIFY(loose.suggestion && near(loose.suggestion->bbox, p.localization_true_box));

    QCOMPARE(first.at(MistakeKind::kSpurious)->annotation_id.value_or(-1), p.spurious_id);
    QVERIFY(!first.at(MistakeKind::kSpurious)->suggestion);
    QCOMPARE(first.at(MistakeKind::kDuplicate)->annotation_id.value_or(-1), p.duplicate_id);
    QVERIFY(!first.at(MistakeKind::kDuplicate)->suggestion);
    for (const Mistake& m : found.mistakes) QVERIFY(!m.detail.empty() && m.score <= 1);
    QVERIFY(std::is_sorted(found.mistakes.begin(), found.mistakes.end(),
                           [](const Mistake& a, const Mistake& b) { return a.score > b.score; }));

    // Image-level: the images with a planted mistake rank above every other.
    std::set<int64_t> planted_images;
    for (size_t i = 0; i < 5; ++i) planted_images.insert(found.mistakes[i].image_id);
    const auto scores = mrcnn::review::imageScores(found, p.input.image_ids);
    double lowest_planted = 1, highest_clean = 0;
    for (const auto& [image, score] : scores) {
      if (planted_images.count(image)) {
        lowest_planted = std::min(lowest_planted, score);
      } else {
        highest_clean = std::max(highest_clean, score);
      }
    }
    QVERIFY2(lowest_planted > highest_clean,
             qPrintable(QString("%1 vs %2").arg(lowest_planted).arg(highest_clean)));
  }

 private slots:
  void plantedMistakesComeFirstWithMasks() { plantedMistakesComeFirst(true); }
  void plantedMistakesComeFirstWithBoxesOnly() { plantedMistakesComeFirst(false); }

  // A detection inside a crowd region is not a missing annotation; crowds are never flagged.
  void crowdRegionsAreNeitherMissingNorMistakes() {
    mrcnn::review::FinderInput in;
    in.image_ids = {1};
    GroundTruth crowd;
    crowd.id = 1;
    crowd.image_id = 1;
    crowd.category_id = 1;
    crowd.bbox = {0, 0, 100, 100};
    crowd.iscrowd = true;
    in.annotations = {crowd};
    Detection inside;
    inside.id = 1;
    inside.image_id = 1;
    inside.category_id = 1;
    inside.bbox = {10, 10, 20, 20};
    inside.score = 0.99;
    Detection outside = inside;
    outside.id = 2;
    outside.bbox = {200, 200, 20, 20};
    in.detections = {inside, outside};
    expectOnlyMissingAt(in, outside.bbox);
  }

  // With masks, a crowd region's mask is its members' pixels: a detection over a few small
  // members covers the gaps between them (little of its mask inside the crowd's), yet it is
  // inside the region by its box and not missing.
  void aDetectionOverASparseCrowdIsNotMissing() {
    mrcnn::review::FinderInput in;
    in.masks = true;
    in.image_ids = {1};
    cv::Mat dots = cv::Mat::zeros(200, 200, CV_8U);
    for (int y = 5; y < 100; y += 15)
      for (int x = 5; x < 100; x += 15) cv::circle(dots, {x, y}, 2, cv::Scalar(1), cv::FILLED);
    GroundTruth crowd;
    crowd.id = 1;
    crowd.image_id = 1;
    crowd.category_id = 1;
    crowd.bbox = {3, 3, 99, 99};
    crowd.iscrowd = true;
    crowd.mask = mrcnn::dataset::encodeMask(dots);
    in.annotations = {crowd};
    Detection over;
    over.id = 1;
    over.image_id = 1;
    over.category_id = 1;
    over.bbox = {20, 20, 40, 40};
    over.mask = mrcnn::dataset::rleFromBbox(over.bbox, 200, 200);
    over.score = 0.95;
    Detection outside = over;
    outside.id = 2;
    outside.bbox = {140, 140, 40, 40};
    outside.mask = mrcnn::dataset::rleFromBbox(outside.bbox, 200, 200);
    in.detections = {over, outside};
    expectOnlyMissingAt(in, outside.bbox);
  }

  // A model that hedges between classes on an object nobody labelled: three detections of one
  // shape, none sure on its own (0.37, 0.32, 0.26), are one missing object at
  // 1 - 0.63 x 0.68 x 0.74 = 0.683; two sure detections of one shape (0.9 and 0.6, two
  // classes) are one entry, not two. A lone unsure detection (0.4) is not listed.
  void aHedgingModelsDetectionsAreOneMissingObject() {
    mrcnn::review::FinderInput in;
    in.image_ids = {1};
    in.category_names = {{1, "square"}, {2, "triangle"}, {3, "star"}};
    int64_t next_id = 1;
    const auto detect = [&](int64_t category, const Box& box, double score) {
      Detection d;
      d.id = next_id++;
      d.image_id = 1;
      d.category_id = category;
      d.bbox = box;
      d.score = score;
      in.detections.push_back(d);
    };
    detect(3, {10, 10, 40, 40}, 0.37);
    detect(2, {11, 10, 40, 41}, 0.32);
    detect(1, {10, 11, 39, 40}, 0.26);
    detect(1, {100, 100, 30, 30}, 0.9);
    detect(2, {101, 100, 30, 31}, 0.6);
    detect(1, {150, 10, 30, 30}, 0.4);
    const auto found = mrcnn::review::findMistakes(in);
    QCOMPARE(found.mistakes.size(), size_t{2});
    const Mistake& sure = found.mistakes[0];
    const Mistake& hedged = found.mistakes[1];
    QCOMPARE(sure.kind, MistakeKind::kMissing);
    QCOMPARE(hedged.kind, MistakeKind::kMissing);
    QVERIFY(near(sure.suggestion->bbox, {100, 100, 30, 30}));
    QCOMPARE(sure.suggestion->category_id, int64_t{1});
    QVERIFY(near(hedged.suggestion->bbox, {10, 10, 40, 40}));
    QCOMPARE(hedged.suggestion->category_id, int64_t{3});
    QVERIFY2(std::abs(sure.score - (1 - 0.1 * 0.4)) < 1e-9, qPrintable(QString::number(sure.score)));
    QVERIFY2(std::abs(hedged.score - (1 - 0.63 * 0.68 * 0.74)) < 1e-9, qPrintable(QString::number(hedged.score)));
    QVERIFY2(QString::fromStdString(hedged.detail).contains("something at 0.68"), hedged.detail.c_str());
  }

  // A class change keeps the outline the annotator drew: of two annotations labelled square
  // that the model sees as circles (0.8, no square there), the one drawn as a circle ranks
  // far above the 0.8 and the one drawn as a square far below it, each saying why; one at the
  // image's border keeps the model's score. The usual
  // outlines come from the set's own annotations (24 squares, 24 circles); a class with fewer
  // than 20 says nothing (the score stays the model's, as in aPartlyHiddenObjectWeighsLess).
  void anOutlineLikeTheOtherClassWeighsIn() {
    constexpr int64_t kSquare = 1, kCircle = 2;
    mrcnn::review::FinderInput in;
    in.masks = true;
    in.category_names = {{kSquare, "square"}, {kCircle, "circle"}};
    int64_t next_id = 1;
    const auto annotate = [&](int64_t image, int64_t category, int side, bool round, int x = 40) {
      cv::Mat m = cv::Mat::zeros(200, 200, CV_8U);
      const int y = 40;
      if (round)
        cv::circle(m, {x + side / 2, y + side / 2}, side / 2, cv::Scalar(1), cv::FILLED);
      else
        m(cv::Rect(x, y, side, side)).setTo(1);
      GroundTruth g;
      g.id = next_id++;
      g.image_id = image;
      g.category_id = category;
      g.mask = mrcnn::dataset::encodeMask(m);
      g.bbox = mrcnn::dataset::toBbox(g.mask);
      g.area = static_cast<double>(mrcnn::dataset::area(g.mask));
      in.annotations.push_back(g);
      in.image_ids.push_back(image);
      return g;
    };
    const auto detect = [&](const GroundTruth& g, int64_t category, double score) {
      Detection d;
      d.id = g.id;
      d.image_id = g.image_id;
      d.category_id = category;
      d.bbox = g.bbox;
      d.mask = g.mask;
      d.score = score;
      in.detections.push_back(d);
    };
    for (int i = 0; i < 24; ++i) {  // the same sizes and aspect: only the fill differs
      detect(annotate(100 + i, kSquare, 30 + i, false), kSquare, 0.9);
      detect(annotate(200 + i, kCircle, 30 + i, true), kCircle, 0.9);
    }
    const GroundTruth drawn_round = annotate(1, kSquare, 40, true);
    const GroundTruth drawn_square = annotate(2, kSquare, 40, false);
    // Drawn round too, but at the image's left border: an outline the border may have cut
    // says nothing, the model's 0.8 stands.
    const GroundTruth at_border = annotate(3, kSquare, 40, true, 0);
    detect(drawn_round, kCircle, 0.8);
    detect(drawn_square, kCircle, 0.8);
    detect(at_border, kCircle, 0.8);
    const auto found = mrcnn::review::findMistakes(in);
    QCOMPARE(found.mistakes.size(), size_t{3});
    const Mistake& first = found.mistakes[0];
    const Mistake& border = found.mistakes[1];
    const Mistake& second = found.mistakes[2];
    QCOMPARE(first.annotation_id.value_or(-1), drawn_round.id);
    QCOMPARE(border.annotation_id.value_or(-1), at_border.id);
    QCOMPARE(second.annotation_id.value_or(-1), drawn_square.id);
    QCOMPARE(first.kind, MistakeKind::kWrongClass);
    QCOMPARE(second.kind, MistakeKind::kWrongClass);
    QVERIFY2(std::abs(border.score - 0.8) < 1e-9, qPrintable(QString::number(border.score)));
    QVERIFY2(!QString::fromStdString(border.detail).contains("outline"), border.detail.c_str());
    // Odds 4 (0.8) times at most 19 either way: 0.987 and 0.174 at the vote's limits.
    QVERIFY2(first.score > 0.95 && second.score < 0.3,
             qPrintable(QString("%1 %2").arg(first.score).arg(second.score)));
    QVERIFY2(QString::fromStdString(first.detail).contains("its outline is more like a circle's"),
             first.detail.c_str());
    QVERIFY2(QString::fromStdString(second.detail).contains("its outline is like a square's"),
             second.detail.c_str());
  }

  // A polygon eroded inside its right box: its mask IoU with the model's (0.8) alone would
  // score low, but its area against the model's, where the model's masks match the
  // annotations' area, is many spreads off: found first, the model's mask suggested.
  void erodedPolygonIsFoundByItsArea() {
    const mrcnn::dataset::CocoDataset coco = mrcnn::dataset::loadCoco(tinycocoVal().toStdString());
    mrcnn::review::FinderInput in = agreeing(coco, true);
    std::vector<GroundTruth>& gts = in.annotations;
    const std::vector<size_t> big = largestPerImage(gts);
    GroundTruth& coarse = gts[big[1]];
    cv::Mat mask = mrcnn::dataset::decodeMask(coarse.mask);
    const double before = cv::countNonZero(mask);
    while (cv::countNonZero(mask) > 0.8 * before) cv::erode(mask, mask, cv::Mat());
    coarse.mask = mrcnn::dataset::encodeMask(mask);
    const double ratio = cv::countNonZero(mask) / before;
    QVERIFY2(ratio > 0.6, qPrintable(QString::number(ratio)));

    const mrcnn::review::FinderResult found = mrcnn::review::findMistakes(in);
    QVERIFY(!found.mistakes.empty());
    const Mistake& top = found.mistakes[0];
    QCOMPARE(top.kind, MistakeKind::kLocalization);
    QCOMPARE(top.annotation_id.value_or(-1), coarse.id);
    QVERIFY2(top.score > 0.5, qPrintable(QString::number(top.score)));  // mask IoU alone: ~0.2
    QVERIFY(top.suggestion && top.suggestion->mask);
    const cv::Mat suggested = mrcnn::dataset::decodeMask(*top.suggestion->mask);
    QCOMPARE(cv::countNonZero(suggested), static_cast<int>(before));  // the model's, whole
  }

  // A confident detection inside an annotated object's box (the model seeing a part of it)
  // ranks below one as confident on the background.
  void aDetectionInsideAnObjectIsLessLikelyMissing() {
    mrcnn::review::FinderInput in;
    in.image_ids = {1};
    GroundTruth object;
    object.id = 1;
    object.image_id = 1;
    object.category_id = 1;
    object.bbox = {0, 0, 100, 100};
    in.annotations = {object};
    Detection whole;  // the object itself
    whole.id = 1;
    whole.image_id = 1;
    whole.category_id = 1;
    whole.bbox = {1, 0, 100, 100};
    whole.score = 0.99;
    Detection part = whole;  // another class on a corner of it
    part.id = 2;
    part.category_id = 2;
    part.bbox = {60, 60, 30, 30};
    part.score = 0.9;
    Detection free = part;
    free.id = 3;
    free.bbox = {200, 200, 30, 30};
    in.detections = {whole, part, free};
    const auto found = mrcnn::review::findMistakes(in);
    QCOMPARE(found.mistakes.size(), size_t{2});
    QVERIFY(near(found.mistakes[0].suggestion->bbox, free.bbox));
    QVERIFY(near(found.mistakes[1].suggestion->bbox, part.bbox));
    QCOMPARE(found.mistakes[1].kind, MistakeKind::kMissing);
    QVERIFY2(std::abs(found.mistakes[0].score - 0.9) < 1e-9 && std::abs(found.mistakes[1].score - 0.45) < 1e-9,
             qPrintable(QString("%1 %2").arg(found.mistakes[0].score).arg(found.mistakes[1].score)));
  }

  // A class disagreement over an object that other annotations partly cover weighs less
  // (the model's view of a covered object is more often the wrong one), and says why.
  void aPartlyHiddenObjectWeighsLess() {
    const auto rect = [](const Box& b) { return mrcnn::dataset::rleFromBbox(b, 200, 200); };
    mrcnn::review::FinderInput in;
    in.masks = true;
    in.image_ids = {1, 2};
    const auto annotation = [&](int64_t id, int64_t image, int64_t category, const Box& box,
                                const Rle& mask) {
      GroundTruth g;
      g.id = id;
      g.image_id = image;
      g.category_id = category;
      g.bbox = box;
      g.mask = mask;
      g.area = static_cast<double>(mrcnn::dataset::area(mask));
      in.annotations.push_back(g);
    };
    const auto detection = [&](int64_t id, int64_t image, int64_t category, const Box& box,
                               const Rle& mask) {
      Detection d;
      d.id = id;
      d.image_id = image;
      d.category_id = category;
      d.bbox = box;
      d.mask = mask;
      d.score = 0.9;
      in.detections.push_back(d);
    };
    // Image 1: a square in full view, seen as class 2.
    annotation(1, 1, 1, {0, 0, 100, 100}, rect({0, 0, 100, 100}));
    detection(1, 1, 2, {0, 0, 100, 100}, rect({0, 0, 100, 100}));
    // Image 2: the same square with its lower 30 rows under another object (annotated, and
    // seen by the model as what it is).
    annotation(2, 2, 1, {0, 0, 100, 100}, rect({0, 0, 100, 70}));
    annotation(3, 2, 3, {0, 70, 100, 40}, rect({0, 70, 100, 40}));
    detection(2, 2, 2, {0, 0, 100, 100}, rect({0, 0, 100, 70}));
    detection(3, 2, 3, {0, 70, 100, 40}, rect({0, 70, 100, 40}));
    const auto found = mrcnn::review::findMistakes(in);
    QCOMPARE(found.mistakes.size(), size_t{2});
    const Mistake& open = found.mistakes[0];
    const Mistake& covered = found.mistakes[1];
    QCOMPARE(open.image_id, int64_t{1});
    QCOMPARE(covered.image_id, int64_t{2});
    QCOMPARE(open.kind, MistakeKind::kWrongClass);
    QCOMPARE(covered.kind, MistakeKind::kWrongClass);
    // 0.9 x (1 - 0) in view; covered 30%: x (1 - 2 x 0.3).
    QVERIFY2(std::abs(open.score - 0.9) < 1e-9, qPrintable(QString::number(open.score)));
    QVERIFY2(std::abs(covered.score - 0.9 * 0.4) < 1e-9, qPrintable(QString::number(covered.score)));
    QVERIFY2(QString::fromStdString(covered.detail).contains("partly hidden (30% of its box"),
             covered.detail.c_str());
    QVERIFY(!QString::fromStdString(open.detail).contains("hidden"));
  }

  // mistakes.json written and read back; a bad file named with its place.
  void mistakesJsonRoundTrips() {
    const mrcnn::dataset::CocoDataset coco = mrcnn::dataset::loadCoco(tinycocoVal().toStdString());
    const Planted p = plant(coco, true);
    mrcnn::review::MistakesFile file;
    file.annotations = "a.json";
    file.typical_overlap = 0.9;
    file.mistakes = mrcnn::review::findMistakes(p.input).mistakes;
    QTemporaryDir dir;
    const QString path = dir.filePath("mistakes.json");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(mrcnn::review::mistakesJson(file)));
    }
    const mrcnn::review::MistakesFile back = mrcnn::review::readMistakesJson(path.toStdString());
    QCOMPARE(back.annotations, file.annotations);
    QVERIFY(!back.results);
    QCOMPARE(back.mistakes.size(), file.mistakes.size());
    for (size_t i = 0; i < back.mistakes.size(); ++i) {
      const Mistake &a = back.mistakes[i], &b = file.mistakes[i];
      QCOMPARE(a.kind, b.kind);
      QCOMPARE(a.score, b.score);
      QCOMPARE(a.annotation_id, b.annotation_id);
      QCOMPARE(a.suggestion.has_value(), b.suggestion.has_value());
      if (a.suggestion) {
        QVERIFY(a.suggestion->mask == b.suggestion->mask);
        QVERIFY(near(a.suggestion->bbox, b.suggestion->bbox));
      }
    }
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(R"({"annotations":"a.json","results":null,"mistakes":[{"image_id":1,"annotation_id":2,)"
            R"("kind":"wrong","score":0.5,"suggestion":null}]})");
    f.close();
    try {
      mrcnn::review::readMistakesJson(path.toStdString());
      QFAIL("an unknown kind was read");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("mistakes.json: mistakes[0].kind: unknown kind \"wrong\""),
               e.what());
    }
  }

  // The task on files: tinycoco's annotations against results that agree with them but for
  // a confident detection on the background and an annotation no detection covers.
  void taskOnFilesWritesMistakesAndEvents() {
    const mrcnn::dataset::CocoDataset coco = mrcnn::dataset::loadCoco(tinycocoVal().toStdString());
    const mrcnn::eval::EvalSet set = mrcnn::eval::groundTruthSet(coco, mrcnn::eval::IouType::Segm);
    std::ostringstream text;
    mrcnn::io::JsonWriter w(text);
    w.beginArray();
    // The annotation left without a detection: one no other annotation's box reaches into
    // (the others' detections then say nothing of it either).
    const auto covered = [&](const GroundTruth& g) {
      for (const GroundTruth& o : set.ground_truths) {
        if (o.id == g.id || o.image_id != g.image_id) continue;
        const double iw = std::min(o.bbox[0] + o.bbox[2], g.bbox[0] + g.bbox[2]) - std::max(o.bbox[0], g.bbox[0]);
        const double ih = std::min(o.bbox[1] + o.bbox[3], g.bbox[1] + g.bbox[3]) - std::max(o.bbox[1], g.bbox[1]);
        if (iw > 0 && ih > 0) return true;
      }
      return false;
    };
    int64_t uncovered = 0;
    for (const GroundTruth& g : set.ground_truths) {
      if (!g.iscrowd && g.area > 500 && !covered(g)) {
        uncovered = g.id;
        break;
      }
    }
    QVERIFY(uncovered != 0);
    for (const GroundTruth& g : set.ground_truths) {
      if (g.iscrowd || g.id == uncovered) continue;
      w.beginObject().key("image_id").value(g.image_id).key("category_id").value(g.category_id);
      w.key("score").value(0.9);
      w.key("segmentation").beginObject();
      w.key("size").beginArray().value(g.mask.h).value(g.mask.w).endArray();
      w.key("counts").value(mrcnn::dataset::toCompressedString(g.mask));
      w.endObject().endObject();
    }
    const int64_t image = set.image_ids.front();
    const auto [h, wd] = mrcnn::eval::imageSizes(coco).at(image);
    const Rle corner = mrcnn::dataset::rleFromBbox({0, 0, 12, 12}, h, wd);
    w.beginObject().key("image_id").value(image).key("category_id").value(set.category_ids.front());
    w.key("score").value(0.97).key("segmentation").beginObject();
    w.key("size").beginArray().value(h).value(wd).endArray();
    w.key("counts").value(mrcnn::dataset::toCompressedString(corner));
    w.endObject().endObject();
    w.endArray();
    QTemporaryDir dir;
    const QString results = mrcnn::testing::writeFile(dir, "results.json", QByteArray::fromStdString(text.str()));
    const QString out = dir.filePath("check");
    const auto run = runProcess(binDir() + "/mrcnn-engine",
                                {"--task", "label_check", "--annotations", tinycocoVal(), "--results",
                                 results, "--output-dir", out, "--top", "1"});
    QVERIFY2(run.code == 0, qPrintable(run.err + run.out));
    QVERIFY2(run.out.contains("likely label mistakes"), qPrintable(run.out));
    const mrcnn::review::MistakesFile file = mrcnn::review::readMistakesJson((out + "/mistakes.json").toStdString());
    QVERIFY(file.results && QString::fromStdString(*file.results).endsWith("results.json"));
    QVERIFY(file.mistakes.size() >= 2);
    std::map<MistakeKind, const Mistake*> first;
    for (size_t i = 0; i < 2; ++i) first.emplace(file.mistakes[i].kind, &file.mistakes[i]);
    QVERIFY(first.count(MistakeKind::kMissing) && first.count(MistakeKind::kSpurious));
    QCOMPARE(first.at(MistakeKind::kMissing)->image_id, image);
    QCOMPARE(first.at(MistakeKind::kSpurious)->annotation_id.value_or(-1), uncovered);
    QVERIFY(first.at(MistakeKind::kMissing)->suggestion->mask == corner);
    QFile events_file(out + "/events.jsonl");
    QVERIFY(events_file.open(QIODevice::ReadOnly));
    const QByteArray events = events_file.readAll();
    QVERIFY2(events.contains("\"type\":\"start\"") && events.contains("\"type\":\"done\""), events.constData());
    // The printed table lists as many entries as --top asks for (of the two found).
    QVERIFY2(run.out.contains("likely label mistakes: 2 ") && run.out.contains("the first 1:"),
             qPrintable(run.out));

    // Results on an image the annotations do not have: named, exit 4, nothing written.
    const QString foreign = mrcnn::testing::writeFile(
        dir, "foreign.json", R"([{"image_id": 987654321, "category_id": 1, "bbox": [1, 1, 5, 5], "score": 0.9}])");
    const auto bad = runProcess(binDir() + "/mrcnn-engine",
                                {"--task", "label_check", "--annotations", tinycocoVal(), "--results",
                                 foreign, "--output-dir", dir.filePath("bad")});
    QCOMPARE(bad.code, 4);
    QVERIFY2(bad.err.contains("foreign.json") && bad.err.contains("987654321"), qPrintable(bad.err));
    QVERIFY(!QFile::exists(dir.filePath("bad/mistakes.json")));
    // A command line missing its results says what it needs.
    const auto usage = runProcess(binDir() + "/mrcnn-engine",
                                  {"--task", "label_check", "--annotations", tinycocoVal()});
    QCOMPARE(usage.code, 2);
    QVERIFY2(usage.err.contains("--results"), qPrintable(usage.err));
  }
};

namespace {

void expectOnlyMissingAt(const mrcnn::review::FinderInput& in, const Box& box) {
  const auto found = mrcnn::review::findMistakes(in);
  QCOMPARE(found.mistakes.size(), size_t{1});
  QCOMPARE(found.mistakes[0].kind, MistakeKind::kMissing);
  QVERIFY(near(found.mistakes[0].suggestion->bbox, box));
}

}  // namespace

QTEST_GUILESS_MAIN(MistakeFinderTest)
#include "test_mistake_finder.moc"
