#include "ui/spec_editor/spec_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include "ui/spec_editor/file_watch.h"
#include "ui/spec_editor/spec_form.h"
#include "ui/spec_editor/spec_text_patch.h"
#include "ui/spec_editor/themed_icon.h"
#include "ui/spec_highlighter.h"

namespace mrcnn::ui {
namespace {

// Pause after the last keystroke before the text is validated again.
constexpr int kValidateDelayMs = 300;

// The spec library counts columns in bytes of UTF-8; the editor in characters.
int characterColumn(const QString& line, int byte_column) {
  if (byte_column <= 1) return byte_column;
  const QByteArray bytes = line.toUtf8();
  const auto prefix = bytes.left(std::min<qsizetype>(bytes.size(), byte_column - 1));
  return static_cast<int>(QString::fromUtf8(prefix).size()) + 1;
}

bool darkPalette(const QPalette& palette) {
  return palette.color(QPalette::Base).lightness() < 128;
}

}  // namespace

SpecEditor::SpecEditor(QWidget* parent)
    : QWidget(parent),
      form_(new SpecForm(this)),
      text_(new QPlainTextEdit(this)),
      splitter_(new QSplitter(Qt::Horizontal, this)),
      task_(new QComboBox(this)),
      state_(new QLabel(this)),
      disk_(new QLabel(this)),
      watch_(new FileWatch(this)),
      debounce_(new QTimer(this)) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 4, 6, 0);
  bar->addWidget(state_, 1);
  disk_->setWordWrap(true);
  disk_->setVisible(false);
  bar->addWidget(disk_, 2);
  bar->addWidget(new QLabel(tr("Task:"), this));
  task_->addItems({u"train"_qs, u"evaluate"_qs, u"inference"_qs, u"dataset_convert"_qs,
                   u"dataset_stats"_qs, u"label_check"_qs, u"export"_qs});
  task_->setToolTip(tr("The task Run starts with this spec"));
  bar->addWidget(task_);
  auto* run = new QPushButton(tr("Run"), this);
  run->setIcon(themedIcon(u"media-playback-start"_qs, u":/icons/run.svg"_qs));
  run->setToolTip(tr("Save the spec and start the task in the Runs view"));
  bar->addWidget(run);
  column->addLayout(bar);

  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_->setTabStopDistance(8 * text_->fontMetrics().horizontalAdvance(u' '));
  text_->viewport()->installEventFilter(this);
  // Above the form: find a field by name or help, or show only what the spec changes.
  auto* form_side = new QWidget(this);
  auto* form_column = new QVBoxLayout(form_side);
  form_column->setContentsMargins(0, 0, 0, 0);
  auto* find_bar = new QHBoxLayout;
  find_bar->setContentsMargins(6, 0, 6, 0);
  find_ = new QLineEdit(form_side);
  find_->setPlaceholderText(tr("Find a field (name or help)"));
  find_->setClearButtonEnabled(true);
  changed_only_ = new QCheckBox(tr("Changed from default"), form_side);
  changed_only_->setToolTip(
      tr("Show only the fields the spec sets to another value than their default"));
  find_count_ = new QLabel(form_side);
  find_bar->addWidget(find_, 1);
  find_bar->addWidget(changed_only_);
  find_bar->addWidget(find_count_);
  form_column->addLayout(find_bar);
  form_column->addWidget(form_, 1);
  const auto filter = [this] {
    const int shown = form_->setFilter(find_->text(), changed_only_->isChecked());
    const bool filtering = !find_->text().trimmed().isEmpty() || changed_only_->isChecked();
    find_count_->setText(filtering ? tr("%n field(s)", nullptr, shown) : QString());
  };
  connect(find_, &QLineEdit::textChanged, this, filter);
  connect(changed_only_, &QCheckBox::toggled, this, filter);
  splitter_->addWidget(form_side);
  splitter_->addWidget(text_);
  splitter_->setStretchFactor(0, 1);
  splitter_->setStretchFactor(1, 1);
  splitter_->setChildrenCollapsible(false);
  column->addWidget(splitter_, 1);
  updateHighlighter();

  debounce_->setSingleShot(true);
  debounce_->setInterval(kValidateDelayMs);
  connect(debounce_, &QTimer::timeout, this, &SpecEditor::validateNow);
  connect(text_, &QPlainTextEdit::textChanged, debounce_, qOverload<>(&QTimer::start));
  connect(text_->document(), &QTextDocument::modificationChanged, this,
          &SpecEditor::modificationChanged);
  connect(text_, &QPlainTextEdit::undoAvailable, this, &SpecEditor::undoAvailable);
  connect(text_, &QPlainTextEdit::redoAvailable, this, &SpecEditor::redoAvailable);
  connect(run, &QPushButton::clicked, this, &SpecEditor::requestRun);

  connect(form_, &SpecForm::fieldEdited, this, [this](const QString& path, const QString& value) {
    applyText(spectext::setField(text(), path, value));
  });
  connect(form_, &SpecForm::fieldCleared, this,
          [this](const QString& path) { applyText(spectext::clearField(text(), path)); });
  connect(form_, &SpecForm::blockToggled, this, [this](const QString& path, bool present) {
    applyText(present ? spectext::ensureBlock(text(), path) : spectext::clearField(text(), path));
  });
  connect(watch_, &FileWatch::changedOnDisk, this, &SpecEditor::onChangedOnDisk);
  connect(watch_, &FileWatch::removedFromDisk, this, &SpecEditor::onRemovedFromDisk);
  validateNow();
}

SpecEditor::~SpecEditor() = default;

void SpecEditor::onChangedOnDisk(const QByteArray& bytes) {
  const QString decoded = QString::fromUtf8(bytes);
  if (isModified()) {
    setDiskNotice(tr("%1 changed on disk while edited here: the edits here are kept; Save "
                     "overwrites the file, Open reloads it")
                      .arg(path_));
  } else if (decoded.toUtf8() != bytes) {
    setDiskNotice(
        tr("%1 changed on disk and is no longer UTF-8 text: the text here is kept").arg(path_));
    text_->document()->setModified(true);
  } else {
    applyText(decoded);  // one undo step: Undo brings the previous text back
    text_->document()->setModified(false);
    validateNow();
    setDiskNotice(
        tr("%1 changed on disk: reloaded (Undo brings the previous text back)").arg(path_));
  }
}

void SpecEditor::onRemovedFromDisk() {
  text_->document()->setModified(true);
  setDiskNotice(tr("%1 was deleted or moved on disk: Save writes it again").arg(path_));
}

void SpecEditor::setDiskNotice(const QString& notice) {
  disk_notice_ = notice;
  disk_->setText(notice);
  disk_->setVisible(!notice.isEmpty());
  if (!notice.isEmpty()) emit statusMessage(notice);
}

QString SpecEditor::text() const {
  return text_->toPlainText();
}

bool SpecEditor::isModified() const {
  return text_->document()->isModified();
}

QString SpecEditor::displayName() const {
  return path_.isEmpty() ? tr("untitled") : QFileInfo(path_).fileName();
}

QString SpecEditor::specDir() const {
  return path_.isEmpty() ? QDir::currentPath() : QFileInfo(path_).absolutePath();
}

void SpecEditor::setPath(const QString& path) {
  path_ = path;
  form_->setBaseDir(path.isEmpty() ? QString() : specDir());
  emit filePathChanged(path_);
}

bool SpecEditor::openFile(const QString& path, QString* error) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    if (error) *error = tr("%1: cannot open the spec: %2").arg(path, file.errorString());
    return false;
  }
  const QByteArray bytes = file.readAll();
  QString decoded = QString::fromUtf8(bytes);
  if (decoded.toUtf8() != bytes) {
    if (error) *error = tr("%1: the spec is not UTF-8 text").arg(path);
    return false;
  }
  text_->setPlainText(decoded);  // also starts a new undo stack
  text_->document()->setModified(false);
  setPath(QFileInfo(path).absoluteFilePath());
  watch_->watch(path_, bytes);
  setDiskNotice({});
  validateNow();
  emit specUsed(path_);
  return true;
}

bool SpecEditor::saveAs(const QString& path, QString* error) {
  QSaveFile file(path);  // written to a temporary name and renamed: never a torn spec
  const QByteArray bytes = text().toUtf8();
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) < 0 || !file.commit()) {
    if (error) *error = tr("%1: cannot save the spec: %2").arg(path, file.errorString());
    return false;
  }
  const bool moved = QFileInfo(path).absoluteFilePath() != path_;
  text_->document()->setModified(false);
  if (moved) {
    setPath(QFileInfo(path).absoluteFilePath());
    validateNow();  // relative paths now resolve from the new folder
  }
  watch_->watch(path_, bytes);
  setDiskNotice({});
  emit specUsed(path_);
  emit statusMessage(tr("Saved %1").arg(path_));
  return true;
}

void SpecEditor::newSpec() {
  text_->setPlainText({});
  text_->document()->setModified(false);
  setPath({});
  watch_->watch({}, {});
  setDiskNotice({});
  validateNow();
}

void SpecEditor::setText(const QString& text) {
  applyText(text);
}

QStringList SpecEditor::replaceAnnotationFile(const QString& original, const QString& replacement) {
  validateNow();
  const QString wanted = QFileInfo(original).absoluteFilePath();
  const spec::Resolved& r = loaded_.resolved;
  QString patched = text();
  QStringList changed;
  for (const auto& [field, path] :
       {std::pair{QStringLiteral("data_config.train_json_file"), r.train_json_file},
        std::pair{QStringLiteral("data_config.val_json_file"), r.val_json_file}}) {
    if (path.empty() || QFileInfo(QString::fromStdString(path.string())).absoluteFilePath() != wanted)
      continue;
    patched = spectext::setField(patched, field, spectext::quoted(replacement));
    changed << field;
  }
  if (!changed.isEmpty()) applyText(patched);
  return changed;
}

void SpecEditor::applyText(const QString& replacement) {
  const QString current = text();
  if (replacement == current) return;
  qsizetype prefix = 0;
  const qsizetype shorter = std::min(current.size(), replacement.size());
  while (prefix < shorter && current[prefix] == replacement[prefix])
    ++prefix;
  qsizetype suffix = 0;
  while (suffix < shorter - prefix &&
         current[current.size() - 1 - suffix] == replacement[replacement.size() - 1 - suffix]) {
    ++suffix;
  }
  QTextCursor cursor(text_->document());
  cursor.beginEditBlock();
  cursor.setPosition(static_cast<int>(prefix));
  cursor.setPosition(static_cast<int>(current.size() - suffix), QTextCursor::KeepAnchor);
  cursor.insertText(replacement.mid(prefix, replacement.size() - suffix - prefix));
  cursor.endEditBlock();
  validateNow();
}

void SpecEditor::validateNow() {
  debounce_->stop();
  const QString origin = path_.isEmpty() ? tr("untitled") : path_;
  loaded_ = spec::loadSpecText(text().toStdString(), origin.toStdString(),
                               std::filesystem::path(specDir().toStdString()));
  problems_.clear();
  for (const spec::Diagnostic& d : loaded_.diagnostics) {
    SpecProblem p;
    p.error = d.isError();
    p.line = d.line;
    p.field = QString::fromStdString(d.field);
    p.message = QString::fromStdString(d.message);
    p.text = QString::fromStdString(d.format());
    if (d.line > 0) {
      const QTextBlock block = text_->document()->findBlockByNumber(d.line - 1);
      p.column = characterColumn(block.text(), d.column);
    }
    problems_.push_back(p);
  }
  form_->showSpec(loaded_.spec);
  showProblems();
  emit problemsChanged();
}

void SpecEditor::addHostProblems(const QString& host, const QStringList& lines) {
  static const QRegularExpression diagnostic(
      QStringLiteral(R"(^.*?(?::(\d+):(\d+))?: (error|warning): (?:([A-Za-z_][\w.\[\]]*): )?(.*)$)"));
  bool added = false;
  for (const QString& line : lines) {
    const QRegularExpressionMatch m = diagnostic.match(line.trimmed());
    if (!m.hasMatch()) continue;
    SpecProblem p;
    p.error = m.captured(3) == QLatin1String("error");
    p.line = m.captured(1).toInt();
    p.field = m.captured(4);
    p.message = tr("on %1: %2").arg(host, m.captured(5));
    p.text = tr("on %1: %2").arg(host, line.trimmed());
    if (p.line > 0) {
      const QTextBlock block = text_->document()->findBlockByNumber(p.line - 1);
      p.column = characterColumn(block.text(), m.captured(2).toInt());
    }
    problems_.push_back(p);
    added = true;
  }
  if (!added) return;
  showProblems();
  emit problemsChanged();
}

void SpecEditor::showProblems() {
  QMap<int, QString> lines;
  QHash<QString, QString> fields;
  QList<QTextEdit::ExtraSelection> marks;
  int errors = 0, warnings = 0;
  for (const SpecProblem& p : std::as_const(problems_)) {
    (p.error ? errors : warnings) += 1;
    if (!p.field.isEmpty()) {
      QString& m = fields[p.field];
      m += (m.isEmpty() ? QString() : u"\n"_qs) + p.message;
    }
    if (p.line <= 0) continue;
    QString& m = lines[p.line];
    m += (m.isEmpty() ? QString() : u"\n"_qs) + p.message;
    // The problem's place, from its column to the end of the token or line, underlined.
    const QTextBlock block = text_->document()->findBlockByNumber(p.line - 1);
    if (!block.isValid()) continue;
    QTextEdit::ExtraSelection mark;
    mark.cursor = QTextCursor(block);
    const int column = std::clamp(p.column - 1, 0, std::max(0, block.length() - 1));
    mark.cursor.setPosition(block.position() + column);
    mark.cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
    if (!mark.cursor.hasSelection()) {
      mark.cursor.movePosition(QTextCursor::StartOfBlock, QTextCursor::KeepAnchor);
    }
    mark.format.setUnderlineStyle(QTextCharFormat::WaveUnderline);
    // Red reads on light and dark bases alike; a translucent tint keeps the text legible.
    const QColor colour = p.error ? QColor(0xe0, 0x30, 0x30) : QColor(0xd0, 0x90, 0x00);
    mark.format.setUnderlineColor(colour);
    QColor tint = colour;
    tint.setAlpha(40);
    mark.format.setBackground(tint);
    mark.format.setToolTip(p.message);
    marks.push_back(mark);
  }
  highlighter_->setErrorLines(lines);
  text_->setExtraSelections(marks);
  form_->showProblems(fields);
  if (errors == 0 && warnings == 0) {
    state_->setText(tr("The spec is valid."));
  } else {
    const QString e = errors == 1 ? tr("1 error") : tr("%1 errors").arg(errors);
    const QString w = warnings == 1 ? tr("1 warning") : tr("%1 warnings").arg(warnings);
    state_->setText(errors == 0 ? w : warnings == 0 ? e : e + u", "_qs + w);
  }
}

bool SpecEditor::hasErrors() const {
  return std::any_of(problems_.begin(), problems_.end(),
                     [](const SpecProblem& p) { return p.error; });
}

QString SpecEditor::task() const {
  return task_->currentText();
}

void SpecEditor::setTask(const QString& task) {
  const int index = task_->findText(task);
  if (index >= 0) task_->setCurrentIndex(index);
}

bool SpecEditor::canUndo() const {
  return text_->document()->isUndoAvailable();
}

bool SpecEditor::canRedo() const {
  return text_->document()->isRedoAvailable();
}

void SpecEditor::undo() {
  text_->undo();
  validateNow();
}

void SpecEditor::redo() {
  text_->redo();
  validateNow();
}

bool SpecEditor::open() {
  if (!maybeSave()) return false;
  const QString start = path_.isEmpty() ? QDir::currentPath() : specDir();
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open a spec"), start,
                                   tr("Experiment specs (*.txt *.spec *.prototxt);;All files (*)"));
  if (path.isEmpty()) return false;
  QString error;
  if (!openFile(path, &error)) {
    QMessageBox::warning(this, tr("Open a spec"), error);
    return false;
  }
  return true;
}

bool SpecEditor::save() {
  if (path_.isEmpty()) return saveAsDialog();
  QString error;
  if (!saveAs(path_, &error)) {
    QMessageBox::warning(this, tr("Save the spec"), error);
    return false;
  }
  return true;
}

bool SpecEditor::saveAsDialog() {
  const QString start = path_.isEmpty() ? QDir::currentPath() + u"/spec.txt"_qs : path_;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save the spec as"), start,
                                                    tr("Experiment specs (*.txt);;All files (*)"));
  if (path.isEmpty()) return false;
  QString error;
  if (!saveAs(path, &error)) {
    QMessageBox::warning(this, tr("Save the spec"), error);
    return false;
  }
  return true;
}

bool SpecEditor::maybeSave() {
  if (!isModified()) return true;
  const auto answer = QMessageBox::question(
      this, tr("Unsaved changes"), tr("%1 has changes that are not saved.").arg(displayName()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  return answer == QMessageBox::Discard || save();
}

bool SpecEditor::requestRun() {
  validateNow();
  if (hasErrors()) {
    emit statusMessage(tr("The spec has errors; fix them before running it."));
    return false;
  }
  // The engine reads the file: what runs is what is saved.
  if ((isModified() || path_.isEmpty()) && !save()) return false;
  emit runRequested(path_, task());
  return true;
}

void SpecEditor::goTo(int line, int column, const QString& field) {
  if (!field.isEmpty()) form_->reveal(field);
  if (line <= 0) return;
  const QTextBlock block = text_->document()->findBlockByNumber(line - 1);
  if (!block.isValid()) return;
  QTextCursor cursor(block);
  cursor.setPosition(block.position() + std::clamp(column - 1, 0, block.length() - 1));
  text_->setTextCursor(cursor);
  text_->ensureCursorVisible();
  text_->setFocus(Qt::OtherFocusReason);
}

void SpecEditor::updateHighlighter() {
  const QMap<int, QString> lines = highlighter_ ? highlighter_->errorLines() : QMap<int, QString>{};
  delete highlighter_;
  highlighter_ = new SpecHighlighter(text_->document(), darkPalette(palette()));
  highlighter_->setErrorLines(lines);
}

void SpecEditor::changeEvent(QEvent* event) {
  // The system switched between light and dark: colours that read on the new base.
  if (event->type() == QEvent::PaletteChange) updateHighlighter();
  QWidget::changeEvent(event);
}

bool SpecEditor::eventFilter(QObject* watched, QEvent* event) {
  if (watched == text_->viewport() && event->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(event);
    const int line = text_->cursorForPosition(help->pos()).blockNumber() + 1;
    const QString message = highlighter_->errorLines().value(line);
    if (message.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(), message, text_->viewport());
    }
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace mrcnn::ui
