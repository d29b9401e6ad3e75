// The New Experiment wizard's import, off the UI thread: dataset::import::importDataset, then
// the dataset check of the files it wrote (examineImport), on a worker of the job's own pool.
// The library is called in-process rather than through mrcnn-engine's dataset_import task:
// it is torch-free like the rest of the GUI's dataset code, the wizard needs its structured
// result (the problems with file and place, the categories, the written paths) rather than
// printed text, and the GUI does not have to start LibTorch to read a few hundred files.
// Progress lines arrive as signals on the UI thread; the window stays responsive throughout.
#pragma once

#include <QObject>
#include <QString>
#include <QThreadPool>
#include <memory>

#include "dataset/import/import.h"
#include "ui/new_experiment/imported_data.h"

namespace mrcnn::ui {

// The result of one import: the data, or what stopped it.
struct ImportOutcome {
  std::shared_ptr<const ImportedData> data;  // null on failure
  QString error;                             // "file: place: message", with what to do
  QString error_file, error_place;           // an ImportError's file and place; else empty
};

class ImportJob : public QObject {
  Q_OBJECT

 public:
  explicit ImportJob(QObject* parent = nullptr);
  // Waits for a running import: it writes a staged folder and renames it, so it is let finish
  // rather than abandoned half way (the library has no cancel).
  ~ImportJob() override;

  // Starts an import; false (and nothing started) while one runs.
  bool start(const dataset::import::ImportOptions& options);
  bool isRunning() const { return running_; }
  // Blocks until the running import has finished and its signals were delivered (tests).
  void waitForFinished();

 signals:
  void progress(const QString& line);
  void finished(const mrcnn::ui::ImportOutcome& outcome);

 private:
  QThreadPool pool_;
  bool running_ = false;
};

}  // namespace mrcnn::ui

Q_DECLARE_METATYPE(mrcnn::ui::ImportOutcome)
