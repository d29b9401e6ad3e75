// What the About box shows: the versions this workbench was built with and runs on. Qt and
// protobuf come from this process; LibTorch and CUDA from `mrcnn-engine --version`, since
// the GUI never links LibTorch.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

class QProcess;

namespace mrcnn::ui {

// "Qt 6.4.2 (built with 6.4.2)", "protobuf 3.21.12".
QStringList localVersions();

// The engine binary: $MRCNN_ENGINE, else mrcnn-engine beside this executable.
QString enginePath();

// Asks the engine for its versions without blocking the UI; emits `done` once with the
// lines it printed, or with the reason it could not be asked.
class EngineVersionQuery : public QObject {
  Q_OBJECT

 public:
  explicit EngineVersionQuery(QObject* parent = nullptr);
  void start(const QString& engine = enginePath(), int timeout_ms = 10000);

 signals:
  void done(const QStringList& lines, bool ok);

 private:
  QProcess* process_ = nullptr;
  bool reported_ = false;
};

}  // namespace mrcnn::ui
