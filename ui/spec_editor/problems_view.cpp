#include "ui/spec_editor/problems_view.h"

#include <QHeaderView>
#include <QStyle>

#include "ui/spec_editor/spec_editor.h"

namespace mrcnn::ui {

ProblemsView::ProblemsView(QWidget* parent) : QTreeWidget(parent) {
  setColumnCount(3);
  setHeaderLabels({tr("Place"), tr("Field"), tr("Problem")});
  setRootIsDecorated(false);
  setUniformRowHeights(true);
  setAlternatingRowColors(true);
  header()->setStretchLastSection(true);
  header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
}

void ProblemsView::attach(SpecEditor* editor) {
  editor_ = editor;
  connect(editor, &SpecEditor::problemsChanged, this, &ProblemsView::refill);
  connect(this, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    if (!editor_) return;
    const int i = indexOfTopLevelItem(item);
    if (i < 0 || i >= editor_->problems().size()) return;
    const SpecProblem& p = editor_->problems()[i];
    editor_->goTo(p.line, p.column, p.field);
  });
  refill();
}

void ProblemsView::refill() {
  clear();
  if (!editor_) return;
  const QIcon error = style()->standardIcon(QStyle::SP_MessageBoxCritical);
  const QIcon warning = style()->standardIcon(QStyle::SP_MessageBoxWarning);
  for (const SpecProblem& p : editor_->problems()) {
    const QString place = p.line > 0 ? tr("line %1:%2").arg(p.line).arg(p.column) : QString();
    auto* item = new QTreeWidgetItem(this, {place, p.field, p.message});
    item->setIcon(0, p.error ? error : warning);
    item->setToolTip(2, p.text);
  }
}

}  // namespace mrcnn::ui
