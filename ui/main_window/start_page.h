// What the window shows when it opens without a spec: the ways to begin (a new experiment
// from your data, the embedded example, a spec, a run) and the recent specs, datasets and
// runs. It only asks; the main window does the opening.
#pragma once

#include <QWidget>

#include "ui/main_window/recent_items.h"

class QCommandLinkButton;

namespace mrcnn::ui {

class RecentPanel;

class StartPage : public QWidget {
  Q_OBJECT

 public:
  enum class Action { NewExperiment, OpenExample, OpenSpec, OpenRun };

  explicit StartPage(RecentItems* recent, QWidget* parent = nullptr);

  QCommandLinkButton* button(Action action) const;
  RecentPanel* recentPanel() const { return recent_panel_; }

 signals:
  void actionRequested(mrcnn::ui::StartPage::Action action);
  void recentRequested(mrcnn::ui::RecentItems::Kind kind, const QString& path);

 private:
  QCommandLinkButton* buttons_[4] = {};
  RecentPanel* recent_panel_;
};

}  // namespace mrcnn::ui
