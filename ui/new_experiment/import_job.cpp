#include "ui/new_experiment/import_job.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <exception>

#include "ui/common/background.h"

namespace mrcnn::ui {

ImportJob::ImportJob(QObject* parent) : QObject(parent) {
  pool_.setMaxThreadCount(1);
  qRegisterMetaType<mrcnn::ui::ImportOutcome>();
}

ImportJob::~ImportJob() {
  waitForBackground(pool_);
}

bool ImportJob::start(const dataset::import::ImportOptions& options) {
  if (running_) return false;
  running_ = true;
  runInBackground(
      pool_, this,
      [this, options] {
        ImportOutcome out;
        // Lines come from the worker; each is posted to the job's (the UI) thread.
        const auto report = [this](const std::string& line) {
          QMetaObject::invokeMethod(
              this, [this, text = QString::fromStdString(line)] { emit progress(text); },
              Qt::QueuedConnection);
        };
        try {
          dataset::import::ImportSummary summary = dataset::import::importDataset(options, report);
          report("checking the written annotation files");
          out.data = std::make_shared<const ImportedData>(examineImport(std::move(summary)));
        } catch (const dataset::import::ImportError& e) {
          out.error = QString::fromStdString(e.what());
          out.error_file = QString::fromStdString(e.file());
          out.error_place = QString::fromStdString(e.place());
        } catch (const std::exception& e) {
          // Writing failed (a full disk, no permission), or a written file did not read back:
          // the message names the path.
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this](ImportOutcome out) {
        running_ = false;
        emit finished(out);
      });
  return true;
}

void ImportJob::waitForFinished() {
  pool_.waitForDone();
  QCoreApplication::sendPostedEvents(this);
}

}  // namespace mrcnn::ui
