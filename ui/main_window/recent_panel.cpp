#include "ui/main_window/recent_panel.h"

#include <QFileInfo>
#include <QHeaderView>

namespace mrcnn::ui {

RecentPanel::RecentPanel(RecentItems* items, QWidget* parent) : QTreeWidget(parent), items_(items) {
  setHeaderHidden(true);
  setColumnCount(1);
  connect(items_, &RecentItems::changed, this, &RecentPanel::refill);
  connect(this, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    if (!item->parent()) return;
    const auto kind = static_cast<RecentItems::Kind>(item->parent()->data(0, Qt::UserRole).toInt());
    emit openRequested(kind, item->data(0, Qt::UserRole).toString());
  });
  refill();
}

void RecentPanel::refill() {
  clear();
  for (const auto kind :
       {RecentItems::Kind::Spec, RecentItems::Kind::Dataset, RecentItems::Kind::Run}) {
    auto* group = new QTreeWidgetItem(this, {RecentItems::label(kind)});
    group->setData(0, Qt::UserRole, static_cast<int>(kind));
    group->setFlags(Qt::ItemIsEnabled);
    for (const QString& path : items_->items(kind)) {
      auto* item = new QTreeWidgetItem(group, {QFileInfo(path).fileName()});
      item->setData(0, Qt::UserRole, path);
      item->setToolTip(0, path);
      if (!QFileInfo::exists(path)) item->setDisabled(true);
    }
    group->setExpanded(true);
  }
}

}  // namespace mrcnn::ui
