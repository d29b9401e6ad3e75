// The embedded example: specs/shapes_resnet18.txt compiled into the program, so that the start
// page opens it whatever folder the program runs from. It is written once into the user's data
// folder (<AppDataLocation>/example/specs/), where its relative paths put the generated shapes
// data set and the runs beside it; a copy already there is opened as it is, edits and all.
#pragma once

#include <QString>

namespace mrcnn::ui {

class ExampleSpec {
 public:
  // The spec's text as compiled in.
  static const char* text();
  // The example's path, written first when missing; "" and `error` (naming the path) when
  // it cannot be written.
  static QString ensureWritten(QString* error = nullptr);
};

}  // namespace mrcnn::ui
