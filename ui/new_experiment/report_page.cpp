#include "ui/new_experiment/report_page.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <filesystem>
#include <system_error>

#include "ui/new_experiment/data_page.h"

namespace mrcnn::ui {
namespace {

constexpr const char* kErrorStyle = "color: #c62828";

}  // namespace

ReportPage::ReportPage(DataPage* data_page, QWidget* parent)
    : QWizardPage(parent),
      data_page_(data_page),
      job_(new ImportJob(this)),
      status_(new QLabel(this)),
      summary_(new QPlainTextEdit(this)),
      problems_label_(new QLabel(this)),
      problems_(new QTreeWidget(this)) {
  setTitle(tr("Import"));
  setSubTitle(
      tr("The data read into COCO files: what went in, what was changed or left out, and "
         "where."));
  status_->setObjectName(u"status"_qs);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setObjectName(u"summary"_qs);
  summary_->setReadOnly(true);
  summary_->setLineWrapMode(QPlainTextEdit::NoWrap);
  summary_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  problems_->setObjectName(u"problems"_qs);
  problems_->setRootIsDecorated(false);
  problems_->setAlternatingRowColors(true);
  problems_->setHeaderLabels(
      {tr("Kind"), tr("Code"), tr("File"), tr("Place"), tr("What happened")});
  problems_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  problems_->header()->setStretchLastSection(true);

  auto* lower = new QWidget(this);
  auto* lower_column = new QVBoxLayout(lower);
  lower_column->setContentsMargins(0, 0, 0, 0);
  lower_column->addWidget(problems_label_);
  lower_column->addWidget(problems_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(summary_);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* column = new QVBoxLayout(this);
  column->addWidget(status_);
  column->addWidget(split, 1);

  connect(job_, &ImportJob::progress, this,
          [this](const QString& line) { summary_->appendPlainText(line); });
  connect(job_, &ImportJob::finished, this, &ReportPage::importDone);
}

std::string ReportPage::optionsKey() const {
  const dataset::import::ImportOptions o = data_page_->importOptions();
  std::string key = o.format + '\n' + o.input.string() + '\n' + o.output_dir.string() + '\n' +
                    o.labels.string() + '\n' + std::to_string(o.seed) + '\n' +
                    (o.copy_images ? "copy" : "refer") + '\n';
  for (const auto& [name, fraction] : o.split)
    key += name + '=' + std::to_string(fraction) + ',';
  return key;
}

void ReportPage::initializePage() {
  const std::string key = optionsKey();
  if (data_ && key == imported_key_) return;  // back and forth: the same import stands
  if (job_->isRunning()) {
    pending_ = true;
    status_->setStyleSheet({});
    status_->setTextFormat(Qt::PlainText);
    status_->setText(tr("Waiting for the import started before to finish…"));
    return;
  }
  const dataset::import::ImportOptions options = data_page_->importOptions();
  if (data_ && data_->dataset_dir == options.output_dir) {
    // The import of a moment ago, with other options, is in the way of this one: it is this
    // wizard's own output, so it is replaced.
    std::error_code ec;
    std::filesystem::remove_all(data_->dataset_dir, ec);
  }
  data_.reset();
  data_page_->setOwnImport({});
  emit completeChanged();
  summary_->clear();
  problems_->clear();
  problems_label_->clear();
  status_->setStyleSheet({});
  status_->setTextFormat(Qt::PlainText);
  status_->setText(tr("Importing %1 as %2 into %3…")
                       .arg(QString::fromStdString(options.input.string()),
                            data_page_->chosenFormat(),
                            QString::fromStdString(options.output_dir.string())));
  started_key_ = key;
  job_->start(options);
}

void ReportPage::importDone(const ImportOutcome& outcome) {
  if (pending_) {
    // The user went back and forward while it ran: what it imported stands only if the
    // options are the same.
    pending_ = false;
    if (outcome.data) {
      data_ = outcome.data;
      imported_key_ = started_key_;
      data_page_->setOwnImport(QString::fromStdString(data_->dataset_dir.string()));
    }
    initializePage();
    if (job_->isRunning()) return;  // another import started: its end reports
    if (data_) showReport(*data_);
    emit completeChanged();
    emit importFinished(data_ != nullptr);
    return;
  }
  if (!outcome.data) {
    status_->setStyleSheet(QLatin1String(kErrorStyle));
    status_->setTextFormat(Qt::PlainText);
    status_->setText(tr("The import failed, and nothing was written: %1\nGo Back to choose "
                        "other data or another format.")
                         .arg(outcome.error));
    summary_->appendPlainText(u"error: "_qs + outcome.error);
    emit completeChanged();
    emit importFinished(false);
    return;
  }
  data_ = outcome.data;
  imported_key_ = started_key_;
  data_page_->setOwnImport(QString::fromStdString(data_->dataset_dir.string()));
  showReport(*data_);
  emit completeChanged();
  emit importFinished(true);
}

void ReportPage::showReport(const ImportedData& data) {
  const auto& s = data.summary;
  status_->setStyleSheet({});
  status_->setTextFormat(Qt::RichText);
  const auto images = [](const std::string& split, int64_t n) {
    return tr("%1 (%2 %3)")
        .arg(QString::fromStdString(split))
        .arg(n)
        .arg(n == 1 ? tr("image") : tr("images"));
  };
  status_->setText(
      tr("Imported %1 (%2%3) into %4%5: training on <b>%6</b>, validating on "
         "<b>%7</b>.")
          .arg(QString::fromStdString(s.input.string()).toHtmlEscaped(),
               QString::fromStdString(s.format), s.format_guessed ? tr(", detected") : QString(),
               QString::fromStdString(data.dataset_dir.string()).toHtmlEscaped(),
               s.seconds >= 0.01 ? tr(" in %1 s").arg(s.seconds, 0, 'f', 2) : QString(),
               images(data.train_split, data.train_images).toHtmlEscaped(),
               data.val_split.empty() ? tr("nothing (no validation split)")
                                      : images(data.val_split, data.val_images).toHtmlEscaped()));
  summary_->setPlainText(QString::fromStdString(dataset::import::formatSummary(s)));
  problems_->clear();
  const auto add = [this](const QString& kind, const dataset::import::ImportProblem& p) {
    auto* item = new QTreeWidgetItem(
        problems_, {kind, QString::fromStdString(p.code), QString::fromStdString(p.file),
                    QString::fromStdString(p.place), QString::fromStdString(p.message)});
    item->setToolTip(2, item->text(2));
    item->setToolTip(4, item->text(4));
  };
  for (const auto& p : s.warnings)
    add(tr("warning"), p);
  for (const auto& p : s.skipped)
    add(tr("skipped"), p);
  problems_label_->setText(s.warnings.empty() && s.skipped.empty()
                               ? tr("Nothing was changed or left out.")
                               : tr("%1 warning(s) (kept, changed) and %2 skip(s) (left out):")
                                     .arg(s.warnings.size())
                                     .arg(s.skipped.size()));
}

bool ReportPage::isComplete() const {
  return data_ != nullptr && !job_->isRunning();
}

}  // namespace mrcnn::ui
