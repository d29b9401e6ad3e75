// The form side of the spec editor, generated from the Experiment descriptor: one editor per
// field (see field_editors.h), a block's fields in sections (form_sections.h), nested messages
// as groups (checked when the block is in the spec), the (help) option as tooltips; a filter
// shows only the fields whose name or help has a text, or only those changed from default. It shows
// a parsed spec and reports the user's edits as field paths and protobuf text literals; the text
// editor stays the source of truth.
#pragma once

#include <QHash>
#include <QScrollArea>
#include <QSet>

#include "specs/experiment.pb.h"

class QFormLayout;
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

  // Shows only the fields whose path or help contains `text` (any case; empty: all) and, with
  // `changed_only`, whose value in the spec differs from the default; sections and blocks
  // left empty hide. Returns the number of fields shown.
  int setFilter(const QString& text, bool changed_only);
  bool isFieldShown(const QString& path) const;
  // The fields the shown spec sets to something else than their default.
  const QSet<QString>& changedFields() const { return changed_; }
  // A section box of a block by "<block path>/<title>" ("/Learning rate", "data_config/Input
  // size"), nullptr when there is none.
  QGroupBox* section(const QString& key) const { return sections_.value(key); }

 signals:
  void fieldEdited(const QString& path, const QString& literal);
  void fieldCleared(const QString& path);
  // A block added to or removed from the spec with its group's check box.
  void blockToggled(const QString& path, bool present);

 private:
  QWidget* buildMessage(const google::protobuf::Descriptor* descriptor, const QString& prefix);
  void showMessage(const google::protobuf::Message& message, const QString& prefix);
  QWidget* closestWidget(QString path) const;
  void applyFilter();

  struct Row {
    QFormLayout* form = nullptr;
    int row = 0;
    QGroupBox* section = nullptr;  // null: the block has no sections
  };
  QHash<QString, Row> rows_;
  QHash<QString, QGroupBox*> sections_;
  QSet<QString> changed_;
  QString filter_text_;
  bool changed_only_ = false;

  QHash<QString, FieldEditor*> editors_;
  QHash<QString, QGroupBox*> groups_;
  QHash<QString, std::pair<QString, QString>> group_titles_;  // title and tooltip unflagged
};

}  // namespace mrcnn::ui
