// The problems of the spec being edited, one row each; activating a row puts the text
// cursor at its line and column and shows its field in the form. A dock of the main window.
#pragma once

#include <QTreeWidget>

namespace mrcnn::ui {

class SpecEditor;

class ProblemsView : public QTreeWidget {
  Q_OBJECT

 public:
  explicit ProblemsView(QWidget* parent = nullptr);
  // Lists `editor`'s problems from now on, and takes it to a problem when one is activated.
  void attach(SpecEditor* editor);

 private:
  void refill();

  SpecEditor* editor_ = nullptr;
};

}  // namespace mrcnn::ui
