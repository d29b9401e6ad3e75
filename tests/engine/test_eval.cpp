// COCO evaluation against pycocotools, run live from the project's environment: the
// published bbox case of ../shared/data, a real annotation file with made-up detections
// (bbox and segm), and hundreds of random ground-truth/detection sets with crowds, empty
// images, tied scores, tiny and huge objects, more than 100 detections an image.
#include <simdjson.h>

#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "dataset/coco/coco.h"
#include "eval/coco_eval.h"
#include "eval/evaluator.h"
#include "eval/results_json.h"
#include "eval/tide.h"
#include "tests/common/reference_script.h"

using namespace mrcnn;
using eval::IouType;

namespace {

QString sharedDir() {
  return qEnvironmentVariable("MRCNN_SHARED_DIR");
}
// Runs the oracle; fails the test (not a skip) if the environment is broken.
bool runOracle(const QStringList& args, QString* log) {
  const QString error =
      mrcnn::testing::runReferenceScript("tests/engine/eval_oracle.py", args, log, 600000);
  if (!error.isEmpty()) *log = error;
  return error.isEmpty();
}

eval::EvalResult evaluateFiles(const std::string& gt_path, const std::string& dt_path, IouType type,
                               eval::ConfusionMatrix* confusion = nullptr,
                               eval::TideResult* tide = nullptr) {
  const dataset::CocoDataset gt = dataset::loadCoco(gt_path);
  eval::EvalSet set = eval::groundTruthSet(gt, type);
  const eval::ImageSizes sizes = eval::imageSizes(gt);
  eval::LoadedResults results = eval::loadResults(dt_path, sizes, set.category_ids);
  if (type == IouType::Segm && !results.has_masks) eval::rasterizeBoxMasks(results, sizes);
  set.detections = std::move(results.detections);
  if (confusion) *confusion = eval::confusionMatrix(set, set.detections, type);
  if (tide) *tide = eval::tideErrors(set, set.detections, type);
  return eval::evaluate(set, type);
}

// The oracle's confusion matrix, row by row.
std::vector<int64_t> expectedConfusion(const std::string& path) {
  simdjson::dom::parser parser;
  std::vector<int64_t> cells;
  for (simdjson::dom::element row : parser.load(path)["confusion"]["matrix"].get_array())
    for (int64_t v : row.get_array())
      cells.push_back(v);
  return cells;
}

struct Expected {
  std::vector<double> stats, precision, recall;
  std::map<int64_t, double> per_category;
};

Expected readExpected(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(path);
  Expected e;
  for (double v : doc["stats"].get_array())
    e.stats.push_back(v);
  for (double v : doc["precision"].get_array())
    e.precision.push_back(v);
  for (double v : doc["recall"].get_array())
    e.recall.push_back(v);
  for (auto [key, value] : doc["per_category"].get_object()) {
    e.per_category[std::stoll(std::string(key))] = static_cast<double>(value);
  }
  return e;
}

// Largest absolute difference; infinity when the shapes differ.
double maxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

QString compare(const eval::EvalResult& r, const Expected& e) {
  const std::vector<double> stats(r.stats.begin(), r.stats.end());
  QString out;
  if (maxDiff(stats, e.stats) > 1e-12) out += "stats differ; ";
  if (maxDiff(r.precision, e.precision) > 1e-12) out += "precision differs; ";
  if (maxDiff(r.recall, e.recall) > 1e-12) out += "recall differs; ";
  for (std::size_t k = 0; k < r.category_ids.size(); ++k) {
    const auto it = e.per_category.find(r.category_ids[k]);
    if (it == e.per_category.end() || std::abs(it->second - r.per_category_ap[k]) > 1e-12) {
      out += QString("per-category AP of %1 differs; ").arg(r.category_ids[k]);
    }
  }
  if (!out.isEmpty()) {
    for (std::size_t i = 0; i < 12; ++i) {
      out += QString("\n  stat %1: ours %2 pycocotools %3")
                 .arg(i)
                 .arg(r.stats[i], 0, 'g', 17)
                 .arg(i < e.stats.size() ? e.stats[i] : -99, 0, 'g', 17);
    }
  }
  return out;
}

// The images behind each confusion cell, from a metrics file's or the oracle's
// [[row, col, [ids]]...] or from a matrix.
using CellImages = std::map<std::pair<int64_t, int64_t>, std::set<int64_t>>;
CellImages cellImages(simdjson::dom::element list) {
  CellImages cells;
  for (simdjson::dom::element entry : list.get_array()) {
    std::set<int64_t>& ids = cells[{int64_t(entry.at(0)), int64_t(entry.at(1))}];
    for (int64_t id : entry.at(2).get_array())
      ids.insert(id);
  }
  return cells;
}
CellImages cellImages(const eval::ConfusionMatrix& m) {
  CellImages cells;
  const std::size_t n = m.category_ids.size() + 1;
  for (std::size_t cell = 0; cell < m.images.size(); ++cell) {
    if (m.images[cell].empty()) continue;
    cells[{int64_t(cell / n), int64_t(cell % n)}].insert(m.images[cell].begin(),
                                                         m.images[cell].end());
  }
  return cells;
}

// TIDE's errors against tidecv's (eval_oracle.py): AP, main and special dAP to 1e-9 AP
// points, error counts and errors per image exactly; empty when they agree.
QString compareTide(const eval::TideResult& t, const std::string& expected_path) {
  simdjson::dom::parser parser;
  const simdjson::dom::element want = parser.load(expected_path)["tide"];
  QString out;
  const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9; };
  if (!near(t.ap, want["ap"]))
    out += QString("AP %1 vs tidecv %2; ").arg(t.ap).arg(double(want["ap"]));
  for (std::size_t i = 0; i < eval::kTideErrorNames.size(); ++i) {
    const std::string_view name = eval::kTideErrorNames[i];
    const double dap = want["main"][name];
    if (!near(t.main_dap[i], dap))
      out += QString("%1 dAP %2 vs tidecv %3; ").arg(name.data()).arg(t.main_dap[i]).arg(dap);
    if (t.counts[i] != int64_t(want["counts"][name]))
      out += QString("%1 count %2 vs tidecv %3; ")
                 .arg(name.data())
                 .arg(t.counts[i])
                 .arg(int64_t(want["counts"][name]));
  }
  if (!near(t.false_positive_dap, want["special"]["FalsePos"])) out += "FalsePos differs; ";
  if (!near(t.false_negative_dap, want["special"]["FalseNeg"])) out += "FalseNeg differs; ";
  std::map<int64_t, int64_t> ours, theirs;
  for (const eval::TideImage& image : t.images)
    ours[image.image_id] = image.total;
  for (auto [key, n] : want["images"].get_object())
    theirs[std::stoll(std::string(key))] = int64_t(n);
  if (ours != theirs) out += "errors per image differ; ";
  for (std::size_t i = 1; i < t.images.size(); ++i)
    if (t.images[i - 1].total < t.images[i].total) out += "images not sorted by errors; ";
  return out;
}

// The metrics file's pr_curves and thresholds of one IoU type against those the oracle made
// from pycocotools' arrays (eval_oracle.py); empty when they agree.
QString compareAnalysis(const std::string& metrics, const char* type,
                        const std::string& expected_path) {
  simdjson::dom::parser ours_parser, expected_parser;
  const simdjson::dom::element ours = ours_parser.parse(metrics)[type];
  const simdjson::dom::element expected = expected_parser.load(expected_path);
  QString out;
  int categories = 0;
  for (auto [key, curves] : expected["pr_curves"].get_object()) {
    ++categories;
    for (const char* iou : {"0.50", "0.75"}) {
      std::vector<double> a, b;
      for (double v : curves[iou].get_array())
        b.push_back(v);
      for (double v : ours["pr_curves"][key][iou].get_array())
        a.push_back(v);
      if (a.size() != 101 || maxDiff(a, b) > 1e-12)
        out += QString("pr curve %1 @%2 differs; ").arg(std::string(key).c_str(), iou);
    }
    std::vector<double> a, b;
    for (double v : expected["pr_scores"][key]["0.50"].get_array())
      b.push_back(v);
    for (double v : ours["pr_scores"][key]["0.50"].get_array())
      a.push_back(v);
    if (a.size() != 101 || maxDiff(a, b) > 1e-12)
      out += QString("scores of the pr curve %1 differ; ").arg(std::string(key).c_str());
    const simdjson::dom::element want = expected["thresholds"][key];
    const simdjson::dom::element got = ours["thresholds"]["categories"][key];
    if (want.is_null() != got.is_null()) {
      out += QString("threshold of %1: one is null; ").arg(std::string(key).c_str());
    } else if (!want.is_null()) {
      for (const char* field : {"score", "precision", "recall", "f1"}) {
        if (std::abs(static_cast<double>(want[field]) - static_cast<double>(got[field])) > 1e-12)
          out += QString("threshold %1 of %2 differs; ").arg(field, std::string(key).c_str());
      }
    }
  }
  if (categories == 0) out += "no categories; ";
  // The confusion matrix with background, cell by cell.
  std::vector<int64_t> want_cells, got_cells;
  for (simdjson::dom::element row : expected["confusion"]["matrix"].get_array())
    for (int64_t v : row.get_array())
      want_cells.push_back(v);
  for (simdjson::dom::element row : ours["confusion"]["matrix"].get_array())
    for (int64_t v : row.get_array())
      got_cells.push_back(v);
  if (want_cells != got_cells) out += "confusion matrix differs; ";
  // The images behind each cell (ours in file order, the oracle's sorted).
  if (cellImages(expected["confusion"]["images"]) != cellImages(ours["confusion"]["images"]))
    out += "images behind the confusion cells differ; ";
  const std::size_t k = static_cast<std::size_t>(categories);
  if (got_cells.size() != (k + 1) * (k + 1)) out += "confusion matrix is not (K+1)x(K+1); ";
  return out;
}
}  // namespace

class EvalTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    if (qEnvironmentVariableIsEmpty("MRCNN_PYTHON")) {
      QSKIP("MRCNN_PYTHON is not set (run through ctest): no pycocotools to compare with");
    }
  }

  void publishedBboxCase() {
    const std::string dir = (sharedDir() + "/data/coco_eval_bbox/").toStdString();
    eval::TideResult tide;
    const eval::EvalResult r =
        evaluateFiles(dir + "gt.json", dir + "dt.json", IouType::Bbox, nullptr, &tide);
    // The published numbers (6 decimals).
    const double published[12] = {0.503647, 0.696973, 0.571667, 0.593252, 0.557991, 0.489363,
                                  0.386813, 0.593680, 0.595353, 0.654764, 0.603130, 0.553744};
    for (int i = 0; i < 12; ++i)
      QVERIFY2(std::abs(r.stats[static_cast<std::size_t>(i)] - published[i]) < 5e-7,
               qPrintable(QString::number(i)));
    // And pycocotools itself, in this run.
    QTemporaryDir tmp;
    QString log;
    const QString out = tmp.filePath("expected.json");
    QVERIFY2(runOracle({"evaluate", QString::fromStdString(dir + "gt.json"),
                        QString::fromStdString(dir + "dt.json"), "bbox", out},
                       &log),
             qPrintable(log));
    const QString diff = compare(r, readExpected(out.toStdString()));
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
    // TIDE's errors of these real detections, as tidecv gives them.
    const QString tide_diff = compareTide(tide, out.toStdString());
    QVERIFY2(tide_diff.isEmpty(), qPrintable(tide_diff));
    QVERIFY(tide.counts[0] + tide.counts[5] > 10);  // the case has class errors and misses
    QVERIFY(
        eval::summaryText(r).find(
            " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.504\n") !=
        std::string::npos);
  }

  void realAnnotationsBboxAndSegm() {
    QTemporaryDir tmp;
    QString log;
    const QString gt = sharedDir() + "/data/tinycoco/annotations/instances_train2017.json";
    QVERIFY2(runOracle({"tinycoco", gt, "11", tmp.path()}, &log), qPrintable(log));
    for (const char* type : {"bbox", "segm"}) {
      eval::TideResult tide;
      const eval::EvalResult r = evaluateFiles(
          gt.toStdString(), tmp.filePath("dt.json").toStdString(),
          std::string(type) == "bbox" ? IouType::Bbox : IouType::Segm, nullptr, &tide);
      const std::string expected =
          tmp.filePath(QString("expected_%1.json").arg(type)).toStdString();
      const QString diff = compare(r, readExpected(expected)) + compareTide(tide, expected);
      QVERIFY2(diff.isEmpty(), qPrintable(QString(type) + ": " + diff));
      QVERIFY(r.stats[0] > 0.05);  // the made-up detections do overlap their objects
    }
  }

  // The training loop's hook: detections in memory, ground truth prepared once, a subset of
  // the images (eval_samples) as COCOeval's params.imgIds.
  void inMemoryHookOnASubset() {
    QTemporaryDir tmp;
    QString log;
    const QString gt_path = sharedDir() + "/data/tinycoco/annotations/instances_train2017.json";
    QVERIFY2(runOracle({"tinycoco", gt_path, "5", tmp.path()}, &log), qPrintable(log));
    const dataset::CocoDataset gt = dataset::loadCoco(gt_path.toStdString());
    std::vector<int64_t> categories;
    for (const auto& c : gt.categories())
      categories.push_back(c.id);
    eval::LoadedResults results =
        eval::loadResults(tmp.filePath("dt.json").toStdString(), eval::imageSizes(gt), categories);
    // The first 10 images of the file, as eval_samples picks them.
    std::vector<int64_t> subset;
    QStringList ids;
    for (std::size_t i = 0; i < 10; ++i) {
      subset.push_back(gt.images()[i].id);
      ids << QString::number(gt.images()[i].id);
    }
    const eval::CocoEvaluator evaluator(gt, /*with_masks=*/true, subset);
    // The hook numbers detections itself; pass them in file order as loadRes would.
    const eval::EvaluationReport report = evaluator.evaluate(results.detections);
    QVERIFY(report.bbox && report.segm);
    for (const char* type : {"bbox", "segm"}) {
      const QString out = tmp.filePath(QString("subset_%1.json").arg(type));
      QVERIFY2(
          runOracle({"evaluate", gt_path, tmp.filePath("dt.json"), type, out, ids.join(",")}, &log),
          qPrintable(log));
      const bool bbox = std::string(type) == "bbox";
      const eval::EvalResult& r = bbox ? *report.bbox : *report.segm;
      const QString diff =
          compare(r, readExpected(out.toStdString())) +
          compareTide(bbox ? *report.bbox_tide : *report.segm_tide, out.toStdString());
      QVERIFY2(diff.isEmpty(), qPrintable(QString(type) + ": " + diff));
    }
    // The metrics json carries both types' 12 stats, and per category the precision curves
    // at IoU .50 and .75 and the F1-best score threshold, as pycocotools' arrays give them.
    const std::string json = eval::metricsJson(report);
    QVERIFY(json.rfind("{\"bbox\":{\"stats\":[", 0) == 0);
    QVERIFY(json.find("\"segm\":{\"stats\":[") != std::string::npos);
    QVERIFY(json.find("\"tide\":{\"iou\":0.5,\"background_iou\":0.1,") != std::string::npos);
    QVERIFY(json.find("\"category_names\":{\"" + std::to_string(gt.categories()[0].id) + "\":\"" +
                      gt.categories()[0].name + "\"") != std::string::npos);
    int thresholds = 0;
    for (const char* type : {"bbox", "segm"}) {
      const QString diff = compareAnalysis(
          json, type, tmp.filePath(QString("subset_%1.json").arg(type)).toStdString());
      QVERIFY2(diff.isEmpty(), qPrintable(QString(type) + ": " + diff));
      simdjson::dom::parser parser;
      for (auto [key, t] : parser.parse(json)[type]["thresholds"]["categories"].get_object())
        thresholds += t.is_null() ? 0 : 1;
    }
    QVERIFY2(thresholds > 0, "no category has a threshold: the case tests nothing");
  }

  void randomSets() {
    QTemporaryDir tmp;
    QString log;
    constexpr int kCases = 300;
    QVERIFY2(runOracle({"random", "2026", QString::number(kCases), tmp.path()}, &log),
             qPrintable(log));
    int compared = 0;
    for (int i = 0; i < kCases; ++i) {
      const QString dir = tmp.filePath(QString("case_%1").arg(i));
      for (const char* type : {"bbox", "segm"}) {
        eval::ConfusionMatrix confusion;
        eval::TideResult tide;
        const eval::EvalResult r = evaluateFiles(
            (dir + "/gt.json").toStdString(), (dir + "/dt.json").toStdString(),
            std::string(type) == "bbox" ? IouType::Bbox : IouType::Segm, &confusion, &tide);
        const std::string expected = (dir + QString("/expected_%1.json").arg(type)).toStdString();
        const QString diff = compare(r, readExpected(expected)) + compareTide(tide, expected);
        QVERIFY2(diff.isEmpty(), qPrintable(dir + " " + type + ": " + diff));
        QVERIFY2(confusion.counts == expectedConfusion(expected),
                 qPrintable(dir + " " + type + ": the confusion matrix differs"));
        simdjson::dom::parser parser;
        QVERIFY2(cellImages(confusion) == cellImages(parser.load(expected)["confusion"]["images"]),
                 qPrintable(dir + " " + type + ": the images behind the confusion cells differ"));
        ++compared;
      }
    }
    qInfo(
        "%d random evaluations equal to pycocotools (confusion matrices to the oracle's, TIDE to "
        "tidecv's)",
        compared);
  }
};

QTEST_GUILESS_MAIN(EvalTest)
#include "test_eval.moc"
