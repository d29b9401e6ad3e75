// Runs `mrcnn-engine --spec SPEC --task inference --images PATH --out OUT [--checkpoint C]
// [--backend openvino [--onnx MODEL]]` as a
// child process (never inference in the GUI process) and reports how it ended. Its stdout may
// be JSON-lines events or plain text; OUT/results.json is what the caller reads either way. The
// engine is $MRCNN_ENGINE or the mrcnn-engine next to the running program, as the headless launcher
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
  // "libtorch" (the model, in the spec's precision) or "openvino" (the checkpoint exported to
  // ONNX on the fly and run by OpenVINO's runtime on the CPU).
  QString backend = QStringLiteral("libtorch");
  // With "openvino": an exported model to run instead (an export's model.onnx, or its
  // model.int8.onnx: int8); empty: the checkpoint exported on the fly.
  QString onnx;
  // Also the detections at or above draft_threshold as COCO annotations to correct
  // (--out-annotations); empty: none.
  QString draft_annotations;
  double draft_threshold = 0.5;
  // > 0: each image in tiles of this side, overlapping by tile_overlap (--tile,
  // --tile-overlap): for images much larger than the model's input.
  int tile = 0;
  double tile_overlap = 0.2;
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
  // stderr and stdout lines, as they come; stdout event lines (specs/events.proto) rendered
  // as text.
  void output(const QString& line);
  // The engine's progress events: images done of `total`.
  void progress(qint64 done, qint64 total);
  // ok: exit code 0; message: the engine's last error line or how it ended.
  void finished(bool ok, const QString& message);

 private:
  QProcess* process_ = nullptr;
  InferenceRequest request_;
  QString last_error_line_;
  bool error_from_event_ = false;
  qint64 total_ = -1;  // images to do, from the start event
};

}  // namespace mrcnn::ui
