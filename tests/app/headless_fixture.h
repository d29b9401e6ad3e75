// The shared pieces of the headless end-to-end tests (test_headless.cpp and
// test_headless_inference.cpp): the engine run as a process, the events of its output read
// and checked, and one short real training run that the tasks' tests share.
#pragma once

#include <google/protobuf/util/message_differencer.h>

#include <QFile>
#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>
#include <memory>
#include <vector>

#include "specs/events.h"
#include "tests/common/process_run.h"

namespace mrcnn::testing {

// The events of a stream of lines (an engine's stdout, events.jsonl). Every line must be an
// event that survives a round trip through the JSON mapping unchanged; `bad` gets the first
// one that does not.
inline std::vector<events::Event> eventsOf(const QByteArray& text, QString* bad) {
  std::vector<events::Event> out;
  for (const QByteArray& line : text.split('\n')) {
    if (line.isEmpty()) continue;
    std::string error;
    const auto event = events::parseJsonLine(line.toStdString(), &error);
    if (!event) {
      if (bad->isEmpty()) *bad = QString::fromUtf8(line) + ": " + QString::fromStdString(error);
      continue;
    }
    const auto again = events::parseJsonLine(events::toJsonLine(*event));
    if (!again || !google::protobuf::util::MessageDifferencer::Equals(*event, *again)) {
      if (bad->isEmpty()) *bad = "does not round-trip: " + QString::fromUtf8(line);
    }
    out.push_back(*event);
  }
  return out;
}

inline QByteArray readFile(const QString& path, qint64 from = 0) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  f.seek(from);
  return f.readAll();
}

inline QStringList typesOf(const std::vector<events::Event>& events) {
  QStringList types;
  for (const auto& e : events)
    types << QString::fromStdString(e.type());
  return types;
}

// One short real training run (4 steps on 6 shapes images, evaluated on 3), made by the first
// test that needs it and shared by the tests of the tasks that use its checkpoint.
class TrainedRunFixture {
 public:
  struct TrainedRun {
    QTemporaryDir dir;
    QStringList args;  // the spec and its overrides
    Run first;         // the training run's launcher output
    QString run;       // the run directory, with a trailing slash
  };

  const TrainedRun& trained() {
    if (trained_) return *trained_;
    trained_ = std::make_unique<TrainedRun>();
    TrainedRun& t = *trained_;
    const QString spec = sourceDir() + "/specs/shapes_resnet18.txt";
    t.args = QStringList{spec,
                         "--set",
                         "data_config.shapes_dataset.root=" + t.dir.filePath("shapes"),
                         "--set",
                         "data_config.shapes_dataset.train_images=6",
                         "--set",
                         "data_config.shapes_dataset.val_images=3",
                         "--set",
                         "output_dir=" + t.dir.filePath("runs"),
                         "--set",
                         "device=cpu",
                         "--set",
                         "train_batch_size=2",
                         "--set",
                         "total_steps=4",
                         "--set",
                         "num_steps_per_eval=2",
                         "--set",
                         "save_checkpoints_steps=2",
                         "--set",
                         "logging_frequency=1",
                         "--set",
                         "visualize_images_summary=true"};
    t.first = headless(t.args);
    t.run = t.dir.filePath("runs/shapes_resnet18/");
    return t;
  }
  // The trained run's spec and overrides, as mrcnn-engine's arguments.
  QStringList engineArgs(const QStringList& more) {
    QStringList args = trained().args;
    args.insert(0, "--spec");
    return args + more;
  }

 private:
  std::unique_ptr<TrainedRun> trained_;
};

}  // namespace mrcnn::testing
