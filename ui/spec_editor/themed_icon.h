// An icon from the desktop theme (which follows light and dark), else our own drawing from
// resources/workbench.qrc when the executable carries it, else none.
#pragma once

#include <QFile>
#include <QIcon>
#include <QString>

namespace mrcnn::ui {

inline QIcon themedIcon(const QString& theme_name, const QString& resource = {}) {
  if (QIcon::hasThemeIcon(theme_name)) return QIcon::fromTheme(theme_name);
  if (!resource.isEmpty() && QFile::exists(resource)) return QIcon(resource);
  return {};
}

}  // namespace mrcnn::ui
