// The analysis view on a real evaluation: tinycoco's val split against detections made from
// its own annotations (some relabelled, shifted, dropped, plus background boxes), evaluated
// by the engine's evaluator into a metrics file. The view shows what the file holds: the class
// table (sortable), a class's PR curve whose dragged threshold is saved into a thresholds file
// inference reads back, the confusion cells' images (opened in Predictions, whose list is
// narrowed to them), TIDE's bars and the images with the most errors; a bad file is named.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListWidget>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "dataset/coco/coco.h"
#include "eval/class_thresholds.h"
#include "eval/evaluator.h"
#include "eval/results_json.h"
#include "ui/analysis/analysis_view.h"
#include "ui/analysis/confusion_plot.h"
#include "ui/analysis/pr_curve_plot.h"
#include "ui/analysis/tide_plot.h"
#include "ui/predictions/prediction_view.h"

using namespace mrcnn;
using namespace mrcnn::ui;

namespace {

QString tinycoco() {
  return qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/tinycoco";
}
QString valJson() {
  return tinycoco() + "/annotations/instances_val2017.json";
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

// Detections made from the ground truth: every 7th object dropped, every 5th relabelled to
// another category of the file, boxes shifted by 0-8 px, scores cycling .05-.95, and one
// box in each image's corner that covers no object.
QByteArray madeDetections(const QJsonObject& gt) {
  QJsonArray categories = gt["categories"].toArray();
  std::map<int64_t, QString> files;
  for (const QJsonValue& v : gt["images"].toArray())
    files[v["id"].toInteger()] = v["file_name"].toString();
  QJsonArray out;
  int n = 0;
  for (const QJsonValue& v : gt["annotations"].toArray()) {
    const QJsonObject a = v.toObject();
    if (a["iscrowd"].toInt() || ++n % 7 == 0) continue;
    int64_t category = a["category_id"].toInteger();
    if (n % 5 == 0) category = categories[n % categories.size()].toObject()["id"].toInteger();
    const QJsonArray b = a["bbox"].toArray();
    const double shift = (n % 3) * 4.0;
    out.append(QJsonObject{
        {"image_id", a["image_id"]},
        {"file_name", files[a["image_id"].toInteger()]},
        {"category_id", static_cast<qint64>(category)},
        {"bbox", QJsonArray{b[0].toDouble() + shift, b[1].toDouble() + shift, b[2], b[3]}},
        {"score", 0.05 + 0.1 * (n % 10)}});
  }
  for (const auto& [id, file] : files) {
    out.append(QJsonObject{{"image_id", static_cast<qint64>(id)},
                           {"file_name", file},
                           {"category_id", categories[0].toObject()["id"]},
                           {"bbox", QJsonArray{0, 0, 6, 6}},
                           {"score", 0.9}});
  }
  return QJsonDocument(out).toJson(QJsonDocument::Compact);
}

}  // namespace

class AnalysisViewTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString metrics_, results_;
  eval::EvaluationReport report_;

 private slots:
  void initTestCase() {
    if (!QFile::exists(valJson())) QSKIP("tinycoco is not there (MRCNN_SHARED_DIR)");
    QFile f(valJson());
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject gt_json = QJsonDocument::fromJson(f.readAll()).object();
    results_ = dir_.filePath("inference/results.json");
    QVERIFY(QDir().mkpath(dir_.filePath("inference")));
    writeFile(results_, madeDetections(gt_json));
    // The engine's evaluation, as the evaluate task writes it.
    const dataset::CocoDataset gt = dataset::loadCoco(valJson().toStdString());
    eval::EvalSet set = eval::groundTruthSet(gt, eval::IouType::Bbox);
    eval::LoadedResults loaded =
        eval::loadResults(results_.toStdString(), eval::imageSizes(gt), set.category_ids);
    eval::evaluateInto(report_, set, loaded.detections, eval::IouType::Bbox);
    for (const auto& c : gt.categories())
      report_.category_names[c.id] = c.name;
    report_.annotations_file = valJson().toStdString();
    report_.image_dir = (tinycoco() + "/images/val2017").toStdString();
    QVERIFY(QDir().mkpath(dir_.filePath("eval")));
    metrics_ = dir_.filePath("eval/step-10.json");
    writeFile(metrics_, QByteArray::fromStdString(eval::metricsJson(report_)));
  }

  void tableHoldsEveryClassAndSorts() {
    AnalysisView view;
    QVERIFY(view.openMetrics(metrics_));
    QCOMPARE(view.iouType(), QString("bbox"));            // the file has no segm
    QCOMPARE(view.results(), QDir::cleanPath(results_));  // <run>/inference beside <run>/eval
    const TypeAnalysis* t = view.current();
    QVERIFY(t);
    QCOMPARE(t->stats[0], report_.bbox->stats[0]);
    auto* model = qobject_cast<QStandardItemModel*>(view.classTable()->model());
    QCOMPARE(model->rowCount(), static_cast<int>(report_.bbox->category_ids.size()));
    // AP ascending first (the weakest class on top), then by objects, descending.
    for (int column : {2, 1}) {
      const Qt::SortOrder order = column == 2 ? Qt::AscendingOrder : Qt::DescendingOrder;
      view.classTable()->sortByColumn(column, order);
      for (int row = 1; row < model->rowCount(); ++row) {
        const double a = model->item(row - 1, column)->data(Qt::UserRole).toDouble();
        const double b = model->item(row, column)->data(Qt::UserRole).toDouble();
        QVERIFY2(order == Qt::AscendingOrder ? a <= b : a >= b, qPrintable(QString::number(row)));
      }
    }
    // Each class's AP is the file's, its objects the confusion row's sum.
    int with_objects = 0;
    for (int row = 0; row < model->rowCount(); ++row) {
      const int64_t id = model->item(row, 0)->data(Qt::UserRole + 1).toLongLong();
      const auto k = static_cast<size_t>(
          std::find(report_.bbox->category_ids.begin(), report_.bbox->category_ids.end(), id) -
          report_.bbox->category_ids.begin());
      QCOMPARE(model->item(row, 2)->data(Qt::UserRole).toDouble(),
               report_.bbox->per_category_ap[k]);
      int64_t objects = 0;
      for (size_t col = 0; col <= report_.bbox_confusion->category_ids.size(); ++col)
        objects += report_.bbox_confusion->at(k, col);
      QCOMPARE(model->item(row, 1)->data(Qt::UserRole).toLongLong(), objects);
      with_objects += objects > 0;
    }
    QVERIFY(with_objects > 5);
  }

  // The curve's marker starts on the F1-best point; a drag moves it to a reachable point,
  // updates the table and the thresholds; saved, inference's reader gets the same numbers.
  void draggedThresholdIsSavedForInference() {
    AnalysisView view;
    QVERIFY(view.openMetrics(metrics_));
    const TypeAnalysis* t = view.current();
    const ClassAnalysis* c = nullptr;
    for (const ClassAnalysis& k : t->classes)
      if (k.f1_best && k.ground_truth >= 10 && (!c || k.ground_truth > c->ground_truth)) c = &k;
    QVERIFY2(c, "no class with a threshold and 10 objects");
    view.selectClass(c->id);
    QCOMPARE(view.selectedClass().value(), c->id);
    QVERIFY(view.prPlot()->marker().has_value());
    QCOMPARE(view.prPlot()->marker()->score, c->f1_best->score);
    QCOMPARE(view.prPlot()->marker()->recall, c->f1_best->recall);
    QCOMPARE(view.prPlot()->marker()->precision, c->f1_best->precision);
    QCOMPARE(view.thresholds().at(c->id), c->f1_best->score);

    // Drag with the mouse from the left edge of the curve to its middle.
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    PrCurvePlot* plot = view.prPlot();
    plot->replot();
    const auto at = [plot](double recall) {
      return QPoint(static_cast<int>(plot->xAxis->coordToPixel(recall)),
                    static_cast<int>(plot->yAxis->coordToPixel(0.5)));
    };
    QSignalSpy dragged(plot, &PrCurvePlot::thresholdDragged);
    QTest::mousePress(plot, Qt::LeftButton, {}, at(0.05));
    QMouseEvent move(QEvent::MouseMove, at(0.3), plot->mapToGlobal(at(0.3)), Qt::NoButton,
                     Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &move);
    QTest::mouseRelease(plot, Qt::LeftButton, {}, at(0.3));
    QVERIFY(dragged.count() >= 2);
    const ClassPoint point = plot->marker().value();
    QVERIFY(std::abs(point.recall - 0.3) <= 0.1);  // the nearest reachable point
    QCOMPARE(dragged.last().at(1).toDouble(), point.score);
    QCOMPARE(view.thresholds().at(c->id), point.score);
    // The point is the one the score gives (what inference at that threshold keeps).
    const std::optional<ClassPoint> again = c->pointAtScore(point.score);
    QVERIFY(again);
    QVERIFY(again->recall >= point.recall);
    QVERIFY(plot->readout().contains(QString::number(point.score, 'f', 3)));
    auto* model = qobject_cast<QStandardItemModel*>(view.classTable()->model());
    bool updated = false;
    for (int row = 0; row < model->rowCount(); ++row) {
      if (model->item(row, 0)->data(Qt::UserRole + 1).toLongLong() == c->id)
        updated = model->item(row, 5)->text() == QString::number(point.score, 'f', 3);
    }
    QVERIFY(updated);

    const QString saved = dir_.filePath("thresholds.json");
    QString error;
    QVERIFY2(view.saveThresholds(saved, &error), qPrintable(error));
    const eval::ClassThresholds read = eval::loadClassThresholds(saved.toStdString());
    const std::map<int64_t, double> want = view.thresholds();
    QCOMPARE(read.score.size(), want.size());
    for (const auto& [id, score] : want)
      QCOMPARE(read.score.at(id), score);
    QCOMPARE(read.score.at(c->id), point.score);
    // A folder that does not exist: refused, named.
    QVERIFY(!view.saveThresholds(dir_.filePath("no/such/dir/t.json"), &error));
    QVERIFY2(error.contains("no/such/dir/t.json"), qPrintable(error));
    // Reset: back to the F1-best.
    view.resetThresholds();
    QCOMPARE(view.thresholds().at(c->id), c->f1_best->score);
  }

  // A click on an off-diagonal cell lists its images; opening them narrows Predictions.
  void confusionCellOpensItsImagesInPredictions() {
    AnalysisView view;
    QVERIFY(view.openMetrics(metrics_));
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const eval::ConfusionMatrix& m = *report_.bbox_confusion;
    const int n = static_cast<int>(m.category_ids.size()) + 1;
    // The busiest cell off the diagonal (a class detected as another, or background).
    int best = -1;
    for (int cell = 0; cell < n * n; ++cell) {
      if (cell / n == cell % n) continue;
      if (best < 0 || m.counts[static_cast<size_t>(cell)] > m.counts[static_cast<size_t>(best)])
        best = cell;
    }
    QVERIFY(best >= 0 && m.counts[static_cast<size_t>(best)] > 0);
    const int row = best / n, column = best % n;
    ConfusionPlot* plot = view.confusionPlot();
    plot->replot();
    QSignalSpy clicked(plot, &ConfusionPlot::cellClicked);
    QTest::mouseClick(plot, Qt::LeftButton, {}, plot->cellCentre(row, column).toPoint());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.first().at(0).toInt(), row);
    QCOMPARE(clicked.first().at(1).toInt(), column);
    const std::vector<int64_t>& ids = m.images[static_cast<size_t>(best)];
    QCOMPARE(view.cellImages()->count(), static_cast<int>(ids.size()));

    QSignalSpy requested(&view, &AnalysisView::imagesRequested);
    QListWidgetItem* second = view.cellImages()->item(std::min(1, view.cellImages()->count() - 1));
    const QPoint on_item = view.cellImages()->visualItemRect(second).center();
    QTest::mouseClick(view.cellImages()->viewport(), Qt::LeftButton, {}, on_item);
    QTest::mouseDClick(view.cellImages()->viewport(), Qt::LeftButton, {}, on_item);
    QCOMPARE(requested.count(), 1);
    const auto wanted = requested.first().at(0).value<QList<qint64>>();
    QCOMPARE(wanted.size(), static_cast<qsizetype>(ids.size()));
    QCOMPARE(wanted.front(), second->data(Qt::UserRole).toLongLong());
    QCOMPARE(requested.first().at(2).toString(), QDir::cleanPath(results_));
    QCOMPARE(requested.first().at(4).toString(), valJson());

    // Predictions shows those images only, the chosen one first.
    PredictionView predictions;
    QSignalSpy loaded(&predictions, &PredictionView::resultsLoaded);
    predictions.showImages(wanted, requested.first().at(1).toString(),
                           requested.first().at(2).toString(), requested.first().at(3).toString(),
                           {});
    QVERIFY(loaded.wait(30000));
    QVERIFY(loaded.first().at(0).toBool());
    QVERIFY(predictions.imageFilterText().contains(requested.first().at(1).toString()));
    const PredictionSet* set = predictions.predictions();
    QCOMPARE(set->images[static_cast<size_t>(predictions.currentImage())].image_id, wanted.front());
    auto* list = predictions.findChild<QListWidget*>();
    int visible = 0;
    for (int i = 0; i < list->count(); ++i) {
      const bool listed = wanted.contains(set->images[static_cast<size_t>(i)].image_id);
      QCOMPARE(list->item(i)->isHidden(), !listed);
      visible += listed;
    }
    QVERIFY(visible > 0);
    predictions.clearImageFilter();
    for (int i = 0; i < list->count(); ++i)
      QVERIFY(!list->item(i)->isHidden());
  }

  void tideBarsAndErrorImages() {
    AnalysisView view;
    QVERIFY(view.openMetrics(metrics_));
    const eval::TideResult& tide = *report_.bbox_tide;
    const QVector<double> bars = view.tidePlot()->values();
    QCOMPARE(bars.size(), 8);
    for (int i = 0; i < 6; ++i)
      QCOMPARE(bars[i], tide.main_dap[static_cast<size_t>(i)]);
    QCOMPARE(bars[6], tide.false_positive_dap);
    QCOMPARE(bars[7], tide.false_negative_dap);
    QVERIFY(tide.main_dap[0] > 0 && tide.counts[5] > 0);  // relabelled and dropped objects
    QTableWidget* images = view.errorImages();
    QCOMPARE(images->rowCount(),
             static_cast<int>(std::min(tide.images.size(), eval::kTideImagesListed)));
    for (int row = 1; row < images->rowCount(); ++row)
      QVERIFY(images->item(row - 1, 1)->data(Qt::DisplayRole).toLongLong() >=
              images->item(row, 1)->data(Qt::DisplayRole).toLongLong());
    QCOMPARE(images->item(0, 0)->data(Qt::DisplayRole).toLongLong(), tide.images[0].image_id);
    QSignalSpy requested(&view, &AnalysisView::imagesRequested);
    emit images->cellDoubleClicked(0, 0);
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().at(0).value<QList<qint64>>(),
             QList<qint64>{tide.images[0].image_id});
  }

  void aRunOpensItsNewestEvaluationAndBadFilesAreNamed() {
    AnalysisView view;
    QVERIFY(view.openRun(dir_.path()));
    QCOMPARE(view.data()->path, dir_.filePath("eval/step-10.json"));
    QString error;
    QVERIFY(!view.openRun(dir_.filePath("inference"), &error));
    QVERIFY2(error.contains("has no evaluation"), qPrintable(error));
    const QString bad = dir_.filePath("bad.json");
    writeFile(bad, R"({"bbox": {"stats": [1, 2, 3]}})");
    QVERIFY(!view.openMetrics(bad, &error));
    QVERIFY2(error == bad + ": bbox.stats: expected the 12 COCO numbers", qPrintable(error));
    QCOMPARE(view.data()->path, dir_.filePath("eval/step-10.json"));  // kept what it showed
    writeFile(bad, "{\"bbox\": ");
    QVERIFY(!view.openMetrics(bad, &error));
    QVERIFY2(error.startsWith(bad + ": byte "), qPrintable(error));
  }
};

QTEST_MAIN(AnalysisViewTest)
#include "test_analysis_view.moc"
