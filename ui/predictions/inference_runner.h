// Runs `mrcnn-engine --spec SPEC --task inference --images PATH --out OUT [--checkpoint C]` as a
// child process (never inference in the GUI process) and reports how it ended. The engine is
// $MRCNN_ENGINE or the mrcnn-engine next to the running program, as the headless launcher
// finds it.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace mrcnn::ui {

struct InferenceRequest {
  QString spec;
  QString checkpoint;  // empty: the engine picks (the run's best or last)
  QString images;      // an image file or a folder
  QString out;         // the output folder (created by the engine)
};

class InferenceRunner : public QObject {
  Q_OBJECT

 public:
  explicit InferenceRunner(QObject* parent = nullptr);
  ~InferenceRunner() override;

  static QString enginePath();
  static QStringList arguments(const InferenceRequest& request);

  // False (with `error`) when a run is going on or the engine cannot be started.
  bool start(const InferenceRequest& request, QString* error = nullptr);
  bool isRunning() const;
  void stop();
  const InferenceRequest& request() const { return request_; }

 signals:
  void output(const QString& line);  // stderr and stdout lines, as they come
  // ok: exit code 0; message: the engine's last error line or how it ended.
  void finished(bool ok, const QString& message);

 private:
  QProcess* process_ = nullptr;
  InferenceRequest request_;
  QString last_error_line_;
};

}  // namespace mrcnn::ui
