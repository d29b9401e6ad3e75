// The form side of the spec editor, generated from the Experiment descriptor: one editor per
// field (see field_editors.h), nested messages as groups (checked when the block is in the
// spec), the (help) option as tooltips. It shows a parsed spec and reports the user's edits
// as field paths and protobuf text literals; the text editor stays the source of truth.
#pragma once

#include <QHash>
#include <QScrollArea>

#include "specs/experiment.pb.h"

class QGroupBox;

namespace mrcnn::ui {

class FieldEditor;

class SpecForm : public QScrollArea {
  Q_OBJECT

 public:
  explicit SpecForm(QWidget* parent = nullptr);

  // Shows `spec` (fields absent from it show their defaults greyed). Emits nothing.
  void showSpec(const spec::Experiment& spec);
  // Flags the editors of these fields (dotted paths); a path without an editor of its own
  // (an unknown field, a block) flags the closest group above it. Clears older flags.
  void showProblems(const QHash<QString, QString>& messages);
  // Relative paths picked in the form are made relative to this folder.
  void setBaseDir(const QString& dir);

  // The editor of a field by dotted path, nullptr when there is none.
  FieldEditor* editor(const QString& path) const { return editors_.value(path); }
  QGroupBox* group(const QString& path) const { return groups_.value(path); }
  QStringList fieldPaths() const { return editors_.keys(); }
  // Scrolls to a field's editor (or its closest group) and gives it the focus.
  void reveal(const QString& path);

 signals:
  void fieldEdited(const QString& path, const QString& literal);
  void fieldCleared(const QString& path);
  // A block added to or removed from the spec with its group's check box.
  void blockToggled(const QString& path, bool present);

 private:
  QWidget* buildMessage(const google::protobuf::Descriptor* descriptor, const QString& prefix);
  void showMessage(const google::protobuf::Message& message, const QString& prefix);
  QWidget* closestWidget(QString path) const;

  QHash<QString, FieldEditor*> editors_;
  QHash<QString, QGroupBox*> groups_;
  QHash<QString, std::pair<QString, QString>> group_titles_;  // title and tooltip unflagged
};

}  // namespace mrcnn::ui
