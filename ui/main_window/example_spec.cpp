#include "ui/main_window/example_spec.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <exception>

#include "io/atomic_file.h"

namespace mrcnn::ui {

QString ExampleSpec::ensureWritten(QString* error) {
  const QString folder = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  const QString path = QDir(folder).filePath(u"example/specs/shapes_resnet18.txt"_qs);
  if (QFileInfo::exists(path)) return path;
  try {
    io::writeFileAtomic(path.toStdString(), text());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return {};
  }
  return path;
}

}  // namespace mrcnn::ui
