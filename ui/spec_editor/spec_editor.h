// The Experiments view: a spec as a generated form (SpecForm) and as protobuf text
// (QPlainTextEdit + SpecHighlighter), kept in sync both ways, validated as you type.
//
// The text is the source of truth and the only undo stack. Typing in the text re-validates
// it after a short pause and refreshes the form from what parses. A form edit rewrites only
// the statement of the field it changed (spec_text_patch.h), as one undoable step, so a TAO
// spec opened here stays byte for byte as written — comments, tabs, True/False — until a
// field is edited, and then differs only on that field's line.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include "specs/spec.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QSplitter;
class QTimer;

namespace mrcnn::ui {

class FileWatch;
class SpecForm;
class SpecHighlighter;

// A problem of the spec, placed in the text.
struct SpecProblem {
  bool error = true;  // false: a warning
  int line = 0;       // 1-based; 0 when it has no place in the text
  int column = 0;     // 1-based, in characters of the line
  QString field;      // dotted path, may be empty
  QString message;
  QString text;  // "file:line:column: error: field: message"
};

class SpecEditor : public QWidget {
  Q_OBJECT

 public:
  explicit SpecEditor(QWidget* parent = nullptr);
  ~SpecEditor() override;

  // Files. openFile and saveAs report a failure in `error` (with the path) and return false.
  bool openFile(const QString& path, QString* error = nullptr);
  bool saveAs(const QString& path, QString* error = nullptr);
  void newSpec();  // an empty, untitled spec
  QString filePath() const { return path_; }
  QString displayName() const;  // the file name, or "untitled"
  bool isModified() const;

  QString text() const;
  // Replaces the whole text as one undoable edit (for pasting a spec in, and for tests).
  void setText(const QString& text);

  // Validation: the problems of the text as of the last check, in text order.
  void validateNow();
  const QList<SpecProblem>& problems() const { return problems_; }
  // Problems another machine's engine found in this spec (a host's validate, which checks its
  // paths there): the "file[:line:column]: error|warning: field: message" lines of `lines`,
  // listed with the local ones (named "on HOST") until the spec is validated again.
  void addHostProblems(const QString& host, const QStringList& lines);
  bool hasErrors() const;
  // What the editor last said about its file on disk ("... changed on disk: reloaded", "...
  // was deleted or moved on disk: ..."); empty while the file is as opened or saved here.
  QString diskNotice() const { return disk_notice_; }

  // The spec as last parsed (what the form shows).
  const spec::LoadedSpec& loaded() const { return loaded_; }

  // Points the spec's data at a corrected copy of an annotation file: each of
  // data_config.train_json_file and val_json_file that names `original` now names
  // `replacement` (one undoable edit). Returns the fields changed (none when the spec does
  // not name the file, e.g. a generated shapes dataset).
  QStringList replaceAnnotationFile(const QString& original, const QString& replacement);

  // The task Run starts: train, evaluate, inference, dataset_convert or export.
  QString task() const;
  void setTask(const QString& task);

  bool canUndo() const;
  bool canRedo() const;

  SpecForm* form() const { return form_; }
  QPlainTextEdit* textEdit() const { return text_; }
  QSplitter* splitter() const { return splitter_; }
  // The form's filter: the text a field's name or help must contain, "changed from default".
  QLineEdit* findField() const { return find_; }
  QCheckBox* changedOnly() const { return changed_only_; }
  SpecHighlighter* highlighter() const { return highlighter_; }

 public slots:
  // Interactive: the file dialogs and questions live here.
  bool open();
  bool save();  // Save As for an untitled spec
  bool saveAsDialog();
  // Asks what to do with unsaved changes; false when the user cancels.
  bool maybeSave();
  void undo();
  void redo();
  // Saves the spec when needed and emits runRequested; refuses a spec with errors.
  bool requestRun();
  // Puts the text cursor at a 1-based line and column and shows the field in the form.
  void goTo(int line, int column, const QString& field = {});

 signals:
  void runRequested(const QString& specPath, const QString& task);
  void problemsChanged();
  void modificationChanged(bool modified);
  void filePathChanged(const QString& path);
  void undoAvailable(bool available);
  void redoAvailable(bool available);
  // A spec opened or saved, for the recent files list.
  void specUsed(const QString& path);
  void statusMessage(const QString& message);

 protected:
  void changeEvent(QEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void applyText(const QString& text);  // the smallest replacement, one undo step
  void setPath(const QString& path);
  void updateHighlighter();
  void showProblems();
  QString specDir() const;
  // The file changed or went away on disk while open here.
  void onChangedOnDisk(const QByteArray& bytes);
  void onRemovedFromDisk();
  void setDiskNotice(const QString& notice);

  QString path_;
  SpecForm* form_;
  QPlainTextEdit* text_;
  SpecHighlighter* highlighter_ = nullptr;
  QSplitter* splitter_;
  QLineEdit* find_ = nullptr;
  QCheckBox* changed_only_ = nullptr;
  QLabel* find_count_ = nullptr;
  QComboBox* task_;
  QLabel* state_;
  QLabel* disk_;  // the disk notice, shown while there is one
  FileWatch* watch_;
  QString disk_notice_;
  QTimer* debounce_;
  spec::LoadedSpec loaded_;
  QList<SpecProblem> problems_;
};

}  // namespace mrcnn::ui
