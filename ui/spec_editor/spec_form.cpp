#include "ui/spec_editor/spec_form.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/spec_editor/field_editors.h"
#include "ui/spec_editor/form_sections.h"

namespace mrcnn::ui {
namespace gp = google::protobuf;

SpecForm::SpecForm(QWidget* parent) : QScrollArea(parent) {
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setWidget(buildMessage(spec::Experiment::descriptor(), {}));
}

namespace {

QFormLayout* newForm() {
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return form;
}

// Whether a field present in `message` holds another value than its default.
bool differsFromDefault(const gp::Message& message, const gp::FieldDescriptor* f) {
  const gp::Reflection* r = message.GetReflection();
  if (f->is_repeated()) return r->FieldSize(message, f) > 0;
  if (!r->HasField(message, f)) return false;
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32:
      return r->GetInt32(message, f) != f->default_value_int32();
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return r->GetInt64(message, f) != f->default_value_int64();
    case gp::FieldDescriptor::CPPTYPE_UINT32:
      return r->GetUInt32(message, f) != f->default_value_uint32();
    case gp::FieldDescriptor::CPPTYPE_UINT64:
      return r->GetUInt64(message, f) != f->default_value_uint64();
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      return r->GetDouble(message, f) != f->default_value_double();
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
      return r->GetFloat(message, f) != f->default_value_float();
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return r->GetBool(message, f) != f->default_value_bool();
    case gp::FieldDescriptor::CPPTYPE_ENUM:
      return r->GetEnumValue(message, f) != f->default_value_enum()->number();
    case gp::FieldDescriptor::CPPTYPE_STRING:
      return r->GetString(message, f) != f->default_value_string();
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      return true;
  }
  return true;
}

}  // namespace

QWidget* SpecForm::buildMessage(const gp::Descriptor* descriptor, const QString& prefix) {
  auto* page = new QWidget;
  auto* column = new QVBoxLayout(page);
  // A block with sections: a titled box each, in the table's order; else one plain form.
  const QString block = prefix.endsWith(u'.') ? prefix.chopped(1) : prefix;
  QHash<QString, QFormLayout*> forms;
  QHash<QString, QGroupBox*> boxes;
  for (const QString& title : formSectionsOf(block)) {
    auto* box = new QGroupBox(title, page);
    auto* form = newForm();
    box->setLayout(form);
    column->addWidget(box);
    forms.insert(title, form);
    boxes.insert(title, box);
    sections_.insert(block + u'/' + title, box);
  }
  QFormLayout* plain = nullptr;
  if (forms.isEmpty()) {
    plain = newForm();
    column->addLayout(plain);
  }
  // Scalars first, then the blocks, each in the proto's order: a block is a group below.
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const gp::FieldDescriptor* f = descriptor->field(i);
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const QString path = prefix + QString::fromStdString(f->name());
    const QString title = formSectionOf(path);
    QFormLayout* form = plain ? plain : forms.value(title);
    FieldEditor* editor = FieldEditor::create(f, page);
    auto* label = new QLabel(QString::fromStdString(f->name()), page);
    label->setToolTip(helpOf(f));
    label->setBuddy(editor->input());
    form->addRow(label, editor);
    rows_.insert(path, Row{form, form->rowCount() - 1, plain ? nullptr : boxes.value(title)});
    editors_.insert(path, editor);
    connect(editor, &FieldEditor::edited, this,
            [this, path](const QString& literal) { emit fieldEdited(path, literal); });
    connect(editor, &FieldEditor::cleared, this, [this, path] { emit fieldCleared(path); });
  }
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const gp::FieldDescriptor* f = descriptor->field(i);
    if (f->cpp_type() != gp::FieldDescriptor::CPPTYPE_MESSAGE || f->is_repeated()) continue;
    const QString path = prefix + QString::fromStdString(f->name());
    auto* group = new QGroupBox(QString::fromStdString(f->name()), page);
    group->setToolTip(helpOf(f));
    group->setCheckable(true);  // checked: the block is written in the spec
    group->setChecked(false);
    auto* inner = new QVBoxLayout(group);
    inner->setContentsMargins(6, 6, 6, 6);
    inner->addWidget(buildMessage(f->message_type(), path + u'.'));
    column->addWidget(group);
    groups_.insert(path, group);
    group_titles_.insert(path, {group->title(), group->toolTip()});
    connect(group, &QGroupBox::clicked, this,
            [this, path](bool on) { emit blockToggled(path, on); });
  }
  // A section the table names but the schema has no field of (none today) stays out.
  for (auto it = boxes.cbegin(); it != boxes.cend(); ++it)
    if (forms.value(it.key())->rowCount() == 0) it.value()->hide();
  if (prefix.isEmpty()) column->addStretch(1);
  return page;
}

int SpecForm::setFilter(const QString& text, bool changed_only) {
  filter_text_ = text.trimmed();
  changed_only_ = changed_only;
  applyFilter();
  int shown = 0;
  for (auto it = rows_.cbegin(); it != rows_.cend(); ++it)
    shown += isFieldShown(it.key());
  return shown;
}

bool SpecForm::isFieldShown(const QString& path) const {
  if (changed_only_ && !changed_.contains(path)) return false;
  if (filter_text_.isEmpty()) return true;
  const FieldEditor* e = editors_.value(path);
  return path.contains(filter_text_, Qt::CaseInsensitive) ||
         (e && helpOf(e->field()).contains(filter_text_, Qt::CaseInsensitive));
}

void SpecForm::applyFilter() {
  QSet<QGroupBox*> used_sections;
  QSet<QString> used_blocks;
  for (auto it = rows_.cbegin(); it != rows_.cend(); ++it) {
    const bool shown = isFieldShown(it.key());
    it->form->setRowVisible(it->row, shown);
    if (!shown) continue;
    if (it->section) used_sections.insert(it->section);
    for (qsizetype dot = it.key().indexOf(u'.'); dot >= 0; dot = it.key().indexOf(u'.', dot + 1))
      used_blocks.insert(it.key().left(dot));
  }
  const bool filtering = changed_only_ || !filter_text_.isEmpty();
  for (QGroupBox* box : std::as_const(sections_))
    box->setVisible(!filtering ? box->layout()->count() > 0 : used_sections.contains(box));
  for (auto it = groups_.cbegin(); it != groups_.cend(); ++it)
    it.value()->setVisible(!filtering || used_blocks.contains(it.key()));
}

void SpecForm::showSpec(const spec::Experiment& spec) {
  showMessage(spec, {});
  if (changed_only_) applyFilter();
}

void SpecForm::showMessage(const gp::Message& message, const QString& prefix) {
  const gp::Descriptor* d = message.GetDescriptor();
  const gp::Reflection* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    const QString path = prefix + QString::fromStdString(f->name());
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) continue;
      if (QGroupBox* group = groups_.value(path)) {
        const QSignalBlocker blocker(group);
        group->setChecked(r->HasField(message, f));
      }
      showMessage(r->GetMessage(message, f), path + u'.');
    } else if (FieldEditor* editor = editors_.value(path)) {
      editor->showValue(message);
      if (differsFromDefault(message, f))
        changed_.insert(path);
      else
        changed_.remove(path);
    }
  }
}

QWidget* SpecForm::closestWidget(QString path) const {
  while (!path.isEmpty()) {
    if (FieldEditor* e = editors_.value(path)) return e;
    if (QGroupBox* g = groups_.value(path)) return g;
    const qsizetype dot = path.lastIndexOf(u'.');
    path = dot < 0 ? QString() : path.left(dot);
  }
  return nullptr;
}

void SpecForm::showProblems(const QHash<QString, QString>& messages) {
  for (FieldEditor* e : std::as_const(editors_))
    e->setProblem({});
  for (auto it = groups_.cbegin(); it != groups_.cend(); ++it) {
    it.value()->setTitle(group_titles_.value(it.key()).first);
    it.value()->setToolTip(group_titles_.value(it.key()).second);
  }
  QHash<QWidget*, QStringList> by_widget;
  for (auto it = messages.cbegin(); it != messages.cend(); ++it) {
    if (QWidget* w = closestWidget(it.key())) by_widget[w].push_back(it.value());
  }
  for (auto it = by_widget.cbegin(); it != by_widget.cend(); ++it) {
    const QString text = it.value().join(u'\n');
    if (auto* e = qobject_cast<FieldEditor*>(it.key())) {
      e->setProblem(text);
    } else if (auto* g = qobject_cast<QGroupBox*>(it.key())) {
      // A group cannot show an icon in its title: the title says it, the tooltip tells.
      const auto n = it.value().size();
      g->setTitle(g->title() + u"  ⚠ "_qs + (n == 1 ? tr("1 problem") : tr("%1 problems").arg(n)));
      g->setToolTip(g->toolTip() + u"\n\n"_qs + text);
    }
  }
}

void SpecForm::setBaseDir(const QString& dir) {
  for (FieldEditor* e : std::as_const(editors_))
    e->setBaseDir(dir);
}

void SpecForm::reveal(const QString& path) {
  QWidget* w = closestWidget(path);
  if (!w) return;
  ensureWidgetVisible(w);
  if (auto* e = qobject_cast<FieldEditor*>(w)) e->input()->setFocus(Qt::OtherFocusReason);
}

}  // namespace mrcnn::ui
