// Many instances in bounded memory: one training step on a 512 x 512 image holding 50 objects,
// then 800 (data_config.max_num_instances raised), each run's peak resident memory read from
// the kernel (wait4's ru_maxrss). The whole anchors x objects IoU matrix at 800 objects would
// be 65,472 x 800 floats (200 MiB) and the whole masks 800 x 512 x 512 bytes (200 MiB a copy);
// the 800-object run must stay within 64 MiB of the 50-object one. Real engine (~40 s).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

struct Peak {
  int code = -1;
  double mib = 0;
  QString err;
};

// Runs the engine with `args`, its output into files beside `log`; its peak resident memory.
Peak runMeasured(const QStringList& args, const QString& log) {
  std::vector<std::string> owned = {(qEnvironmentVariable("MRCNN_BIN_DIR") + "/mrcnn-engine").toStdString()};
  for (const QString& a : args) owned.push_back(a.toStdString());
  std::vector<char*> argv;
  for (std::string& s : owned) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string out = (log + ".out").toStdString(), err = (log + ".err").toStdString();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Peak p;
  int status = 0;
  struct rusage usage {};
  if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid) {
    p.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    p.mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
  }
  QFile f(QString::fromStdString(err));
  if (f.open(QIODevice::ReadOnly)) p.err = QString::fromUtf8(f.readAll()).right(3000);
  return p;
}

// One 512 x 512 image of `count` ellipses (10-24 px) on a jittered grid, each its own polygon;
// its COCO file in `dir`.
QString makeSet(const QString& dir, int count) {
  std::mt19937 rng(static_cast<uint32_t>(count));
  std::uniform_real_distribution<double> unit(0, 1);
  cv::Mat image(512, 512, CV_8UC3);
  cv::randu(image, cv::Scalar(60, 60, 60), cv::Scalar(200, 200, 200));
  cv::GaussianBlur(image, image, cv::Size(0, 0), 3);
  const int cells = static_cast<int>(std::ceil(std::sqrt(count)));
  const double cell = 512.0 / cells;
  QJsonArray annotations;
  for (int k = 0; k < count; ++k) {
    const double r = std::min(12.0, cell / 2 - 1) * (0.5 + 0.5 * unit(rng));
    const double cx = (k % cells + 0.5) * cell, cy = (k / cells + 0.5) * cell;
    const double ry = r * (0.6 + 0.4 * unit(rng));
    std::vector<cv::Point> points;
    QJsonArray polygon;
    for (int v = 0; v < 16; ++v) {
      const double x = cx + r * std::cos(2 * M_PI * v / 16), y = cy + ry * std::sin(2 * M_PI * v / 16);
      points.emplace_back(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y)));
      polygon << x << y;
    }
    cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points},
                 cv::Scalar(255 * unit(rng), 255 * unit(rng), 255 * unit(rng)));
    annotations << QJsonObject{{"id", k + 1}, {"image_id", 1}, {"category_id", 1 + k % 4},
                               {"segmentation", QJsonArray{polygon}},
                               {"bbox", QJsonArray{cx - r, cy - ry, 2 * r, 2 * ry}},
                               {"area", M_PI * r * ry}, {"iscrowd", 0}};
  }
  cv::imwrite((dir + "/image.png").toStdString(), image);
  QJsonArray categories;
  for (int c = 1; c <= 4; ++c) categories << QJsonObject{{"id", c}, {"name", QString("shape%1").arg(c)}};
  const QJsonObject coco{{"images", QJsonArray{QJsonObject{{"id", 1}, {"file_name", "image.png"},
                                                           {"width", 512}, {"height", 512}}}},
                         {"annotations", annotations},
                         {"categories", categories}};
  QFile f(dir + "/instances.json");
  f.open(QIODevice::WriteOnly);
  f.write(QJsonDocument(coco).toJson(QJsonDocument::Compact));
  return f.fileName();
}

}  // namespace

class ManyInstancesTest : public QObject {
  Q_OBJECT

 private slots:
  void peakMemoryDoesNotGrowWithTheObjects() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile in(qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/specs/shapes_resnet18.txt");
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString text = QString::fromUtf8(in.readAll());
    text.remove(QRegularExpression("shapes_dataset \\{[^}]*\\}"));
    const QString spec = dir.filePath("spec.txt");
    QFile out(spec);
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(text.toUtf8()) > 0);
    out.close();

    std::vector<double> peaks;
    for (const int count : {50, 800}) {
      const QString set = dir.filePath(QString("set%1").arg(count));
      QVERIFY(QDir().mkpath(set));
      const QString json = makeSet(set, count);
      QStringList args = {"--spec", spec, "--task", "train", "--run-dir", set + "/run"};
      for (const QString& s : QStringList{
               "device=cpu", "total_steps=1", "train_batch_size=1", "warmup_steps=0",
               "logging_frequency=1", "data_config.train_json_file=" + json,
               "data_config.train_image_dir=" + set, "data_config.val_json_file=" + json,
               "data_config.val_image_dir=" + set, "data_config.image_size=(512, 512)",
               "data_config.max_num_instances=1000", "data_config.n_workers=1",
               "data_config.prefetch_buffer_size=1"})
        args << "--set" << s;
      const Peak p = runMeasured(args, set + "/engine");
      QVERIFY2(p.code == 0, qPrintable(p.err));
      qInfo("%d objects: peak resident %.0f MiB", count, p.mib);
      peaks.push_back(p.mib);
    }
    QVERIFY2(peaks[1] - peaks[0] < 64,
             qPrintable(QString("800 objects: %1 MiB, 50: %2 MiB").arg(peaks[1]).arg(peaks[0])));
  }
};

QTEST_GUILESS_MAIN(ManyInstancesTest)
#include "test_many_instances.moc"
