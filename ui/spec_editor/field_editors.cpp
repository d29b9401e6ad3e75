#include "ui/spec_editor/field_editors.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QStyle>
#include <QToolButton>
#include <limits>

#include "specs/options.pb.h"
#include "ui/spec_editor/spec_text_patch.h"

namespace mrcnn::ui {
namespace gp = google::protobuf;

namespace {

QString fromStd(const std::string& s) {
  return QString::fromStdString(s);
}

// Floats as protobuf text writes them back: the shortest form that reads as the same float.
QString floatText(double v) {
  return QString::number(v, 'g', 7);
}

QString defaultLiteral(const gp::FieldDescriptor* f) {
  if (!f->has_default_value() && f->cpp_type() != gp::FieldDescriptor::CPPTYPE_BOOL &&
      f->cpp_type() != gp::FieldDescriptor::CPPTYPE_ENUM) {
    return {};
  }
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32:
      return QString::number(f->default_value_int32());
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return QString::number(f->default_value_int64());
    case gp::FieldDescriptor::CPPTYPE_UINT32:
      return QString::number(f->default_value_uint32());
    case gp::FieldDescriptor::CPPTYPE_UINT64:
      return QString::number(f->default_value_uint64());
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
      return floatText(f->default_value_float());
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      return floatText(f->default_value_double());
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return f->default_value_bool() ? u"true"_qs : u"false"_qs;
    case gp::FieldDescriptor::CPPTYPE_ENUM:
      return fromStd(f->default_value_enum()->name());
    case gp::FieldDescriptor::CPPTYPE_STRING:
      return fromStd(f->default_value_string());
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return {};
}

// A spin box whose lowest value stands for "not set": it shows nothing there, so the
// line edit's placeholder (the default) shows through, greyed.
class OptionalSpinBox : public QSpinBox {
 public:
  explicit OptionalSpinBox(QWidget* parent) : QSpinBox(parent) {}
  int unset() const { return minimum(); }
  void setDefault(int value) { default_ = value; }
  void setPlaceholder(const QString& text) { lineEdit()->setPlaceholderText(text); }

 protected:
  QString textFromValue(int value) const override {
    return value == unset() ? QString() : QString::number(value);
  }
  int valueFromText(const QString& text) const override {
    return text.trimmed().isEmpty() ? unset() : text.trimmed().toInt();
  }
  QValidator::State validate(QString& text, int& pos) const override {
    if (text.trimmed().isEmpty()) return QValidator::Acceptable;
    return QSpinBox::validate(text, pos);
  }
  void stepBy(int steps) override {
    // Stepping from "not set" starts at the default, not at the sentinel.
    if (value() == unset()) {
      setValue(default_ + steps);
    } else {
      QSpinBox::stepBy(steps);
      if (value() == unset()) setValue(unset() + 1);
    }
  }

 private:
  int default_ = 0;
};

class IntEditor : public FieldEditor {
 public:
  IntEditor(const gp::FieldDescriptor* f, QWidget* parent)
      : FieldEditor(f, parent), spin_(new OptionalSpinBox(this)) {
    const bool is_unsigned = f->cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT32 ||
                             f->cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT64;
    // The lowest value is the "not set" sentinel; values past int's range are not editable
    // here (the text editor takes them).
    spin_->setRange(is_unsigned ? -1 : std::numeric_limits<int>::min(),
                    std::numeric_limits<int>::max());
    spin_->setDefault(defaultText().toInt());
    spin_->setKeyboardTracking(false);
    spin_->setPlaceholder(defaultText());
    spin_->setMinimumWidth(120);
    setInput(spin_);
    connect(spin_, &QSpinBox::valueChanged, this, [this](int v) {
      if (updating_) return;
      if (v == spin_->unset()) {
        userCleared();
      } else {
        userEdited(QString::number(v));
      }
    });
  }
  QWidget* input() const override { return spin_; }
  QString literal() const override {
    return spin_->value() == spin_->unset() ? QString() : QString::number(spin_->value());
  }

 protected:
  void display(const gp::Message& holder, bool present) override {
    const gp::Reflection* r = holder.GetReflection();
    long long v = spin_->unset();
    if (present) {
      switch (field()->cpp_type()) {
        case gp::FieldDescriptor::CPPTYPE_INT32:
          v = r->GetInt32(holder, field());
          break;
        case gp::FieldDescriptor::CPPTYPE_INT64:
          v = r->GetInt64(holder, field());
          break;
        case gp::FieldDescriptor::CPPTYPE_UINT32:
          v = r->GetUInt32(holder, field());
          break;
        default:
          v = static_cast<long long>(r->GetUInt64(holder, field()));
          break;
      }
    }
    updating_ = true;
    spin_->setValue(static_cast<int>(std::clamp<long long>(v, spin_->minimum(), spin_->maximum())));
    updating_ = false;
  }

 private:
  OptionalSpinBox* spin_;
  bool updating_ = false;
};

class LineEditor : public FieldEditor {
 public:
  LineEditor(const gp::FieldDescriptor* f, QWidget* parent)
      : FieldEditor(f, parent), edit_(new QLineEdit(this)) {
    edit_->setPlaceholderText(defaultText());
    setInput(edit_);
    connect(edit_, &QLineEdit::editingFinished, this, [this] {
      if (edit_->text() == shown_) return;  // focus left without a change
      shown_ = edit_->text();
      if (shown_.trimmed().isEmpty()) {
        userCleared();
      } else {
        userEdited(toLiteral(shown_));
      }
    });
  }
  QWidget* input() const override { return edit_; }
  QString literal() const override {
    return edit_->text().isEmpty() ? QString() : toLiteral(edit_->text());
  }

 protected:
  virtual QString toLiteral(const QString& text) const = 0;
  virtual QString fromMessage(const gp::Message& holder) const = 0;
  // Whether `text` already shows the value `shown` (so typing style is not overwritten).
  virtual bool same(const QString& text, const QString& shown) const { return text == shown; }

  void display(const gp::Message& holder, bool present) override {
    const QString value = present ? fromMessage(holder) : QString();
    if (!same(edit_->text(), value)) edit_->setText(value);
    shown_ = edit_->text();
  }
  QLineEdit* edit() const { return edit_; }

 private:
  QLineEdit* edit_;
  QString shown_;
};

class FloatEditor : public LineEditor {
 public:
  FloatEditor(const gp::FieldDescriptor* f, QWidget* parent) : LineEditor(f, parent) {
    // protobuf text's floats: 1, -0.5, .5, 1e-4, 2.f, inf, nan.
    static const QRegularExpression pattern(
        uR"([-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d*)?[fF]?|inf(inity)?|nan))"_qs,
        QRegularExpression::CaseInsensitiveOption);
    edit()->setValidator(new QRegularExpressionValidator(pattern, edit()));
  }

 protected:
  QString toLiteral(const QString& text) const override { return text.trimmed(); }
  QString fromMessage(const gp::Message& holder) const override {
    const gp::Reflection* r = holder.GetReflection();
    return field()->cpp_type() == gp::FieldDescriptor::CPPTYPE_FLOAT
               ? floatText(r->GetFloat(holder, field()))
               : floatText(r->GetDouble(holder, field()));
  }
  bool same(const QString& text, const QString& shown) const override {
    if (text.isEmpty() || shown.isEmpty()) return text == shown;
    bool a = false, b = false;
    const float x = QString(text).remove(QChar(u'f'), Qt::CaseInsensitive).toFloat(&a);
    const float y = shown.toFloat(&b);
    return a && b && x == y;
  }
};

class StringEditor : public LineEditor {
 public:
  StringEditor(const gp::FieldDescriptor* f, QWidget* parent, PathKind kind)
      : LineEditor(f, parent), kind_(kind) {
    if (kind == PathKind::None) return;
    auto* pick = new QToolButton(this);
    pick->setText(u"…"_qs);
    pick->setToolTip(kind == PathKind::Folder ? tr("Choose a folder") : tr("Choose a file"));
    pick->setIcon(style()->standardIcon(kind == PathKind::Folder ? QStyle::SP_DirOpenIcon
                                                                 : QStyle::SP_FileIcon));
    static_cast<QHBoxLayout*>(layout())->insertWidget(1, pick);
    connect(pick, &QToolButton::clicked, this, [this] { choose(); });
  }
  void setBaseDir(const QString& dir) override { base_ = dir; }

 protected:
  QString toLiteral(const QString& text) const override { return spectext::quoted(text); }
  QString fromMessage(const gp::Message& holder) const override {
    return fromStd(holder.GetReflection()->GetString(holder, field()));
  }

 private:
  void choose() {
    const QString start = base_.isEmpty() ? QDir::currentPath() : base_;
    const QString current = edit()->text().isEmpty() ? start : QDir(start).filePath(edit()->text());
    const QString picked =
        kind_ == PathKind::Folder
            ? QFileDialog::getExistingDirectory(this, field()->name().c_str(), current)
            : QFileDialog::getOpenFileName(this, field()->name().c_str(), current);
    if (picked.isEmpty()) return;
    // Relative paths in a spec are taken from its folder: keep them relative.
    const QString value = base_.isEmpty() ? picked : QDir(base_).relativeFilePath(picked);
    edit()->setText(value);
    emit edit()->editingFinished();
  }

  PathKind kind_;
  QString base_;
};

// Repeated fields: comma-separated values, written back as a list `name: [a, b]`.
class ListEditor : public LineEditor {
 public:
  using LineEditor::LineEditor;

 protected:
  QString toLiteral(const QString& text) const override {
    QStringList items;
    for (const QString& item : text.split(u',', Qt::SkipEmptyParts)) {
      const bool string = field()->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING;
      items.push_back(string ? spectext::quoted(item.trimmed()) : item.trimmed());
    }
    return u'[' + items.join(u", "_qs) + u']';
  }
  QString fromMessage(const gp::Message& holder) const override {
    const gp::Reflection* r = holder.GetReflection();
    QStringList items;
    for (int i = 0; i < r->FieldSize(holder, field()); ++i) {
      if (field()->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING) {
        items.push_back(fromStd(r->GetRepeatedString(holder, field(), i)));
      }
    }
    return items.join(u", "_qs);
  }
};

class BoolEditor : public FieldEditor {
 public:
  BoolEditor(const gp::FieldDescriptor* f, QWidget* parent)
      : FieldEditor(f, parent), box_(new QCheckBox(this)), note_(new QLabel(this)) {
    setInput(box_);
    // The default state is shown in the box itself; the note says it is the default.
    note_->setText(tr("default"));
    note_->setForegroundRole(QPalette::PlaceholderText);
    static_cast<QHBoxLayout*>(layout())->insertWidget(1, note_);
    static_cast<QHBoxLayout*>(layout())->insertStretch(2);
    connect(box_, &QCheckBox::clicked, this,
            [this](bool on) { userEdited(on ? u"true"_qs : u"false"_qs); });
  }
  QWidget* input() const override { return box_; }
  QString literal() const override {
    if (!isSet()) return {};
    return box_->isChecked() ? u"true"_qs : u"false"_qs;
  }

 protected:
  void display(const gp::Message& holder, bool present) override {
    box_->setChecked(holder.GetReflection()->GetBool(holder, field()));
    note_->setVisible(!present);
  }

 private:
  QCheckBox* box_;
  QLabel* note_;
};

// Enums (their value names) and strings with (choices) (quoted words).
class ChoiceEditor : public FieldEditor {
 public:
  ChoiceEditor(const gp::FieldDescriptor* f, QWidget* parent)
      : FieldEditor(f, parent), combo_(new QComboBox(this)) {
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_ENUM) {
      for (int i = 0; i < f->enum_type()->value_count(); ++i)
        combo_->addItem(fromStd(f->enum_type()->value(i)->name()));
    } else {
      for (const QString& word : fromStd(f->options().GetExtension(spec::choices)).split(u'|'))
        combo_->addItem(word.trimmed());
    }
    combo_->setPlaceholderText(defaultText());
    combo_->setMinimumWidth(120);
    setInput(combo_);
    connect(combo_, &QComboBox::activated, this, [this](int i) {
      const QString word = combo_->itemText(i);
      userEdited(field()->cpp_type() == gp::FieldDescriptor::CPPTYPE_ENUM ? word
                                                                          : spectext::quoted(word));
    });
  }
  QWidget* input() const override { return combo_; }
  QString literal() const override {
    if (combo_->currentIndex() < 0) return {};
    return field()->cpp_type() == gp::FieldDescriptor::CPPTYPE_ENUM
               ? combo_->currentText()
               : spectext::quoted(combo_->currentText());
  }

 protected:
  void display(const gp::Message& holder, bool present) override {
    if (!present) {
      combo_->setCurrentIndex(-1);  // the placeholder: the default, greyed
      return;
    }
    const gp::Reflection* r = holder.GetReflection();
    const QString value = field()->cpp_type() == gp::FieldDescriptor::CPPTYPE_ENUM
                              ? fromStd(r->GetEnum(holder, field())->name())
                              : fromStd(r->GetString(holder, field()));
    int index = combo_->findText(value);
    if (index < 0) {
      // A word the validator rejects: shown as written, so the form matches the text.
      combo_->addItem(value);
      index = combo_->count() - 1;
    }
    combo_->setCurrentIndex(index);
  }

 private:
  QComboBox* combo_;
};

}  // namespace

QString helpOf(const gp::FieldDescriptor* field) {
  return fromStd(field->options().GetExtension(spec::help));
}

PathKind pathKindOf(const gp::FieldDescriptor* field) {
  if (field->cpp_type() != gp::FieldDescriptor::CPPTYPE_STRING || field->is_repeated()) {
    return PathKind::None;
  }
  const QString name = fromStd(field->name());
  if (name.endsWith(u"_dir"_qs) || name == u"root"_qs) return PathKind::Folder;
  if (name.endsWith(u"_file"_qs) || name.endsWith(u"_path"_qs) || name == u"checkpoint"_qs) {
    return PathKind::File;
  }
  return PathKind::None;
}

FieldEditor* FieldEditor::create(const gp::FieldDescriptor* field, QWidget* parent) {
  if (field->is_repeated()) return new ListEditor(field, parent);
  switch (field->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32:
    case gp::FieldDescriptor::CPPTYPE_INT64:
    case gp::FieldDescriptor::CPPTYPE_UINT32:
    case gp::FieldDescriptor::CPPTYPE_UINT64:
      return new IntEditor(field, parent);
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      return new FloatEditor(field, parent);
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return new BoolEditor(field, parent);
    case gp::FieldDescriptor::CPPTYPE_ENUM:
      return new ChoiceEditor(field, parent);
    case gp::FieldDescriptor::CPPTYPE_STRING:
      if (field->options().HasExtension(spec::choices)) return new ChoiceEditor(field, parent);
      return new StringEditor(field, parent, pathKindOf(field));
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return nullptr;  // blocks are groups of the form, not editors
}

FieldEditor::FieldEditor(const gp::FieldDescriptor* field, QWidget* parent)
    : QWidget(parent), field_(field), reset_(new QToolButton(this)), flag_(new QLabel(this)) {
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  reset_->setIcon(style()->standardIcon(QStyle::SP_DialogResetButton));
  reset_->setToolTip(tr("Remove from the spec: use the default (%1)").arg(defaultText()));
  reset_->setAutoRaise(true);
  reset_->setEnabled(false);
  row->addWidget(reset_);
  const int side = style()->pixelMetric(QStyle::PM_SmallIconSize);
  flag_->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxCritical).pixmap(side, side));
  flag_->setVisible(false);
  row->addWidget(flag_);
  connect(reset_, &QToolButton::clicked, this, [this] { userCleared(); });
  setToolTip(helpOf(field));
}

void FieldEditor::setInput(QWidget* input) {
  static_cast<QHBoxLayout*>(layout())->insertWidget(0, input, /*stretch=*/1);
  input->setToolTip(helpOf(field_));
}

QString FieldEditor::defaultText() const {
  const QString text = defaultLiteral(field_);
  if (text.isEmpty() && !field_->has_default_value()) return tr("not set");
  return text;
}

void FieldEditor::showValue(const gp::Message& holder) {
  const bool present = field_->is_repeated() ? holder.GetReflection()->FieldSize(holder, field_) > 0
                                             : holder.GetReflection()->HasField(holder, field_);
  const QSignalBlocker blocker(this);
  set_ = present;
  reset_->setEnabled(present);
  display(holder, present);
}

void FieldEditor::setProblem(const QString& message) {
  problem_ = message;
  flag_->setVisible(!message.isEmpty());
  flag_->setToolTip(message);
  input()->setProperty("specProblem", !message.isEmpty());
  input()->setToolTip(message.isEmpty() ? helpOf(field_) : helpOf(field_) + u"\n\n"_qs + message);
}

void FieldEditor::userEdited(const QString& literal) {
  set_ = true;
  reset_->setEnabled(true);
  emit edited(literal);
}

void FieldEditor::userCleared() {
  set_ = false;
  reset_->setEnabled(false);
  emit cleared();
}

}  // namespace mrcnn::ui
