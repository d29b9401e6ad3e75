// The prune task end to end on one short real training run (headless_fixture.h): model.pt
// and status.json as a Python user reads them, the per-layer table in the events, a
// non-empty folder and bad options refused without touching anything; then the pruned
// model retrained through pruned_model_path, and evaluate, inference, resume, export and a
// second prune on the retrained run. The functions run in order and share the prunes.
#include <QCryptographicHash>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

#include "tests/app/headless_fixture.h"
#include "tests/common/process_run.h"
#include "tests/common/reference_script.h"

namespace {

using mrcnn::testing::engine;
using mrcnn::testing::eventsOf;
using mrcnn::testing::headless;
using mrcnn::testing::readFile;
using mrcnn::testing::Run;
using mrcnn::testing::typesOf;

QJsonObject jsonFile(const QString& path) {
  return QJsonDocument::fromJson(readFile(path)).object();
}

QByteArray digest(const QString& path) {
  return QCryptographicHash::hash(readFile(path), QCryptographicHash::Sha256).toHex();
}

}  // namespace

class PruneTest : public QObject, mrcnn::testing::TrainedRunFixture {
  Q_OBJECT

 private:
  QTemporaryDir out_;
  QString pruned_;  // the first prune's folder

  // The overrides that retrain the first prune's model for `steps` steps in runs/retrained.
  QStringList retrainArgs(int steps) const {
    return {"--set", "pruned_model_path=" + pruned_ + "/model.pt", "--set", "run_name=retrained",
            "--set", QString("total_steps=%1").arg(steps)};
  }

  // The trained run pruned into `dir` (an engine run).
  Run prune(const QString& dir, const QStringList& more = {}) {
    return engine(engineArgs(QStringList{"--task", "prune", "--output-dir", dir} + more));
  }

 private slots:
  // The short training run the prunes start from (a test function of its own: on a busy
  // machine it takes a good part of Qt's five minutes a function).
  void trainTheRunToPrune() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
  }

  // model.pt (torch.load, weights_only) and status.json agree with each other and with the
  // task's events; the table lists every prunable layer.
  void pruneWritesTheModelAndItsStatus() {
    QVERIFY(trained().first.code == 0);
    pruned_ = out_.filePath("pruned");
    // A freshly trained model's filters are alike: a high threshold prunes some of them.
    const Run r = prune(pruned_, {"--pruning-threshold", "0.97", "--pruning-granularity", "4",
                                  "--min-num-filters", "8"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    QCOMPARE(typesOf(events).first(), QString("start"));
    QCOMPARE(QString::fromStdString(events.front().task()), QString("prune"));
    QCOMPARE(QString::fromStdString(events.back().status()), QString("ok"));
    QString table;
    for (const auto& e : events)
      if (e.type() == "log" && e.text().find("kept filters per layer") != std::string::npos)
        table = QString::fromStdString(e.text());
    QVERIFY2(table.contains("backbone.body.layer4.1.conv2") &&
                 table.contains("rpn.head.conv.0.0") && table.contains("roi_heads.mask_head.3.0"),
             qPrintable(table));

    const QJsonObject status = jsonFile(pruned_ + "/status.json");
    const double ratio = status["pruning_ratio"].toDouble();
    const qint64 params = status["param_count"].toInteger();
    const qint64 before = status["before"].toObject()["param_count"].toInteger();
    QVERIFY2(ratio > 0.05 && ratio < 0.99, qPrintable(QString::number(ratio)));
    QCOMPARE(ratio, static_cast<double>(params) / static_cast<double>(before));
    QCOMPARE(status["size"].toInteger(), QFileInfo(pruned_ + "/model.pt").size());
    QVERIFY(status["gflops"].toDouble() < status["before"].toObject()["gflops"].toDouble());
    QVERIFY(status["gflops"].toDouble() > 0.1);
    QCOMPARE(status["options"].toObject()["pruning_threshold"].toDouble(), 0.97);
    QCOMPARE(status["options"].toObject()["equalization_criterion"].toString(), QString("union"));
    const QJsonArray layers = status["layers"].toArray();
    QCOMPARE(layers.size(), 1 + 8 * 2 + 3 + 1 + 4);  // stem, 8 blocks x 2, 3 projections, RPN, mask
    int narrower = 0;
    for (const auto& l : layers) {
      const QJsonObject o = l.toObject();
      QVERIFY(o["kept"].toInteger() <= o["filters"].toInteger());
      QVERIFY(o["kept"].toInteger() >= 8);
      narrower += o["kept"].toInteger() < o["filters"].toInteger();
    }
    QVERIFY(narrower > 5);
    QVERIFY(QString::fromStdString(events.back().summary()).contains("pruned_model_path"));

    // As a Python user reads it.
    QString log;
    const QString error = mrcnn::testing::runReferenceScript("tests/app/pruned_model_oracle.py",
                                                             {pruned_ + "/model.pt"}, &log);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QJsonObject oracle = QJsonDocument::fromJson(log.toUtf8()).object();
    QCOMPARE(oracle["param_count"].toInteger(), params);
    QCOMPARE(oracle["other_keys"].toArray(), QJsonArray({"meta.json"}));
    QCOMPARE(oracle["meta"].toObject()["format"].toString(),
             QString("mrcnn-workbench pruned model"));
    const QJsonObject widths = oracle["meta"].toObject()["conv_widths"].toObject();
    QCOMPARE(widths.size(), narrower);
    const QJsonObject shapes = oracle["shapes"].toObject();
    for (auto it = widths.begin(); it != widths.end(); ++it)
      QCOMPARE(shapes[it.key() + ".weight"].toArray().first().toInteger(), it.value().toInteger());
  }

  // A folder with anything in it is refused and left as it was; so are options out of range
  // and an excluded layer that is not a prunable convolution.
  void badOutputFolderAndOptionsAreRefused() {
    QVERIFY(!pruned_.isEmpty());
    const QByteArray model = digest(pruned_ + "/model.pt");
    Run r = prune(pruned_);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(pruned_ + " is not empty"), qPrintable(r.err));
    QCOMPARE(digest(pruned_ + "/model.pt"), model);

    const QString fresh = out_.filePath("never");
    const std::vector<std::pair<QStringList, QString>> cases = {
        {{"--pruning-threshold", "1.5"}, "--pruning-threshold 1.5: a number in [0, 1]"},
        {{"--normalizer", "l1"}, "--normalizer l1: use max or L2"},
        {{"--equalization-criterion", "mean"}, "--equalization-criterion mean"},
        {{"--pruning-granularity", "0"}, "--pruning-granularity 0: a whole number from 1"},
        {{"--excluded-layers", "backbone.fpn.inner_blocks.0.0"},
         "excluded layer \"backbone.fpn.inner_blocks.0.0\" is not a prunable convolution"}};
    for (const auto& [args, message] : cases) {
      r = prune(fresh, args);
      QVERIFY2(r.code == 2 && r.err.contains(message), qPrintable(args.join(' ') + ": " + r.err));
      QVERIFY(!QFileInfo::exists(fresh));
    }
    r = engine(engineArgs({"--task", "prune"}));
    QVERIFY2(r.code == 2 && r.err.contains("--output-dir"), qPrintable(r.err));
  }

  // pruned_model_path: training starts from the pruned model in its architecture; the run's
  // checkpoints carry it, so evaluate and inference work on it.
  void thePrunedModelRetrainsAndIsEvaluated() {
    QVERIFY(!pruned_.isEmpty());
    const QStringList retrain = retrainArgs(2);
    const Run r = headless(trained().args + retrain + QStringList{"--raw-events"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("pruned layers"), qPrintable(r.out));
    const QString run = trained().dir.filePath("runs/retrained/");
    QVERIFY(QFileInfo::exists(run + "checkpoints/model.step-2.pt"));
    QVERIFY(readFile(run + "checkpoints/model.step-2.pt").contains("conv_widths"));

    const QStringList on_run = engineArgs(retrain);
    Run e = engine(on_run + QStringList{"--task", "evaluate"});
    QVERIFY2(e.code == 0 && e.out.contains("\"eval\""), qPrintable(e.out + e.err));
    e = engine(on_run + QStringList{"--task", "inference", "--out", out_.filePath("inference")});
    QVERIFY2(e.code == 0, qPrintable(e.out + e.err));
    QVERIFY(QFileInfo::exists(out_.filePath("inference/results.json")));
  }

  // The retrained run resumes from its own (pruned) checkpoint, exports, and prunes again.
  void theRetrainedRunResumesExportsAndPrunesAgain() {
    const QString run = trained().dir.filePath("runs/retrained/");
    QVERIFY(QFileInfo::exists(run + "checkpoints/model.step-2.pt"));
    const QStringList on_run = engineArgs(retrainArgs(2));
    Run e = headless(trained().args + retrainArgs(3) + QStringList{"--raw-events"});
    QVERIFY2(e.code == 0, qPrintable(e.out + e.err));
    QString bad;
    const auto resumed = eventsOf(e.out.toUtf8(), &bad);
    const auto start = std::find_if(resumed.begin(), resumed.end(),
                                    [](const auto& event) { return event.type() == "start"; });
    QVERIFY2(start != resumed.end() && start->start_step() == 2, qPrintable(e.out));
    QVERIFY(QFileInfo::exists(run + "checkpoints/model.step-3.pt"));
    e = engine(on_run + QStringList{"--task", "export", "--output-dir", out_.filePath("export"),
                                    "--images", trained().dir.filePath("shapes/images/val")});
    QVERIFY2(e.code == 0, qPrintable(e.out + e.err));
    QVERIFY(QFileInfo::exists(out_.filePath("export/model.onnx")));
    QVERIFY(!QFileInfo::exists(out_.filePath("export/model.pth")));  // not torchvision's
    e = engine(on_run + QStringList{"--task", "prune", "--output-dir", out_.filePath("again"),
                                    "--pruning-threshold", "0.97"});
    QVERIFY2(e.code == 0 && e.out.contains("already pruned in"), qPrintable(e.out + e.err));
    QVERIFY(jsonFile(out_.filePath("again/status.json"))["param_count"].toInteger() <=
            jsonFile(pruned_ + "/status.json")["param_count"].toInteger());
  }
};

QTEST_GUILESS_MAIN(PruneTest)
#include "test_prune.moc"
