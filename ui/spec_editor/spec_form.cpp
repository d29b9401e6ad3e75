#include "ui/spec_editor/spec_form.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/spec_editor/field_editors.h"

namespace mrcnn::ui {
namespace gp = google::protobuf;

SpecForm::SpecForm(QWidget* parent) : QScrollArea(parent) {
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setWidget(buildMessage(spec::Experiment::descriptor(), {}));
}

QWidget* SpecForm::buildMessage(const gp::Descriptor* descriptor, const QString& prefix) {
  auto* page = new QWidget;
  auto* column = new QVBoxLayout(page);
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  column->addLayout(form);
  // Scalars first, then the blocks, each in the proto's order: a block is a group below.
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const gp::FieldDescriptor* f = descriptor->field(i);
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const QString path = prefix + QString::fromStdString(f->name());
    FieldEditor* editor = FieldEditor::create(f, page);
    auto* label = new QLabel(QString::fromStdString(f->name()), page);
    label->setToolTip(helpOf(f));
    label->setBuddy(editor->input());
    form->addRow(label, editor);
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
  if (prefix.isEmpty()) column->addStretch(1);
  return page;
}

void SpecForm::showSpec(const spec::Experiment& spec) {
  showMessage(spec, {});
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
