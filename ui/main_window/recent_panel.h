// The Recent dock: recent specs, datasets and runs as three groups; activating an entry
// asks for it to be opened. Entries whose file is gone are shown disabled.
#pragma once

#include <QTreeWidget>

#include "ui/main_window/recent_items.h"

namespace mrcnn::ui {

class RecentPanel : public QTreeWidget {
  Q_OBJECT

 public:
  explicit RecentPanel(RecentItems* items, QWidget* parent = nullptr);

 signals:
  void openRequested(mrcnn::ui::RecentItems::Kind kind, const QString& path);

 private:
  void refill();

  RecentItems* items_;
};

}  // namespace mrcnn::ui
