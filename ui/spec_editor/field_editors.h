// One editor per spec field, chosen by the field's type: a spin box for integers, a line
// edit for floats (protobuf's own float syntax, any precision), a check box for booleans, a
// combo box for enums and for strings with (choices), a line edit with a file or folder
// picker for paths, a line edit for other strings. A field absent from the spec shows its
// default greyed (as the placeholder) and reports edits as protobuf text literals.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <QWidget>

class QLabel;
class QToolButton;

namespace mrcnn::ui {

class FieldEditor : public QWidget {
  Q_OBJECT

 public:
  // The editor for `field`, of the kind its type and annotations call for.
  static FieldEditor* create(const google::protobuf::FieldDescriptor* field,
                             QWidget* parent = nullptr);

  const google::protobuf::FieldDescriptor* field() const { return field_; }
  // Shows the field's value in `holder` (the message that contains the field), or its
  // default greyed when the field is absent there. Emits nothing.
  void showValue(const google::protobuf::Message& holder);
  // Whether the field is written in the spec (false: its default applies).
  bool isSet() const { return set_; }
  // Flags the editor with a problem of the spec (an empty message clears the flag).
  void setProblem(const QString& message);
  QString problem() const { return problem_; }
  // The widget that takes the input (for tests and focus).
  virtual QWidget* input() const = 0;
  // The value shown, as protobuf text; empty when the field is absent.
  virtual QString literal() const = 0;
  // The default of the field as shown greyed ("not set" when it has none).
  QString defaultText() const;
  // Folder that picked paths are made relative to (the spec file's), empty for absolute.
  virtual void setBaseDir(const QString& dir) { (void)dir; }

 signals:
  void edited(const QString& literal);  // the user gave the field this value
  void cleared();                       // the user reset the field to its default

 protected:
  FieldEditor(const google::protobuf::FieldDescriptor* field, QWidget* parent);
  // Adds the input widget to the row (before the reset button and the problem flag).
  void setInput(QWidget* input);
  virtual void display(const google::protobuf::Message& holder, bool present) = 0;
  // Called by subclasses when the user changed the value.
  void userEdited(const QString& literal);
  void userCleared();

 private:
  const google::protobuf::FieldDescriptor* field_;
  QToolButton* reset_;
  QLabel* flag_;
  QString problem_;
  bool set_ = false;
};

// Whether a string field holds a path, and of what: by TAO's naming (`*_dir`, `*_file`,
// `*_path`, `checkpoint`, `root`); patterns (globs) are not paths to pick.
enum class PathKind { None, File, Folder };
PathKind pathKindOf(const google::protobuf::FieldDescriptor* field);

// The (help) option of a field, empty when it has none.
QString helpOf(const google::protobuf::FieldDescriptor* field);

}  // namespace mrcnn::ui
