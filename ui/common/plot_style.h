// Plots that follow the application's palette (light or dark): background, axes, tick
// labels and grid of a QCustomPlot in the palette's colours.
#pragma once

#include <QPalette>

class QCustomPlot;

namespace mrcnn::ui {

// Colours every axis of the plot's axis rects and their grids from `palette`; returns the
// grid colour (the text colour, faint) for items drawn on top.
QColor applyPlotPalette(QCustomPlot* plot, const QPalette& palette);

}  // namespace mrcnn::ui
