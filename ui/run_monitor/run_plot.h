// One chart of the run monitor: a metric (one or two series keys) against step for every run
// shown, each run in its own colour, overlaid for comparison. Optional EMA smoothing (raw
// curve kept faint behind), log scale, a hover read-out (tracer and values), zoom and drag
// (double-click goes back to fitting the data). Colours follow the widget's palette.
#pragma once

#include <qcustomplot.h>

#include <QColor>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QVector>

namespace mrcnn::ui {

class RunModel;

struct PlotSpec {
  QString title;
  QStringList keys;         // the first drawn solid, the second dashed
  bool smoothable = false;  // per-step noisy values (losses, throughput)
  bool loggable = false;    // follows the log-scale toggle
  bool markers = false;     // a dot on each point (evaluations are few; one alone must show)
  // The second key holds one point per evaluation (the validation loss beside the training
  // loss): drawn with dots and never smoothed.
  bool second_per_evaluation = false;
  QStringList labels{};  // the keys' names in the readout (default: the key's last part)
};

struct PlotRun {
  QString name;
  QColor colour;
  const RunModel* model = nullptr;
};

// Exponential moving average with bias correction (the first values are not pulled towards
// zero): weight 0 returns the values unchanged, 0.99 smooths over about a hundred points.
QVector<double> smoothEma(const QVector<double>& values, double weight);

class RunPlot : public QCustomPlot {
  Q_OBJECT

 public:
  explicit RunPlot(PlotSpec spec, QWidget* parent = nullptr);

  const PlotSpec& spec() const { return spec_; }
  // The runs to draw (rebuilds the graphs); call refresh() after.
  void setRuns(const QVector<PlotRun>& runs);
  // Copies the runs' current series into the graphs and replots (fitting the data unless the
  // user zoomed or dragged).
  void refresh();
  void setSmoothing(double weight);
  void setLogScale(bool on);
  void applyPalette(const QPalette& palette);
  // Fit the data again (what a double-click does).
  void resetView();

  // What the hover read-out says at `step`: "step N" and, per run and key, the value nearest.
  QString readoutAt(double step) const;
  // The points drawn for a run and key (smoothed when smoothing is on); for tests.
  QVector<QPointF> drawnPoints(int run, int key) const;
  bool hasData() const;

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  struct Curve {
    int run = 0;
    int key = 0;
    QCPGraph* raw = nullptr;       // faint, only when smoothing
    QCPGraph* smoothed = nullptr;  // the curve the eye follows
  };
  void styleCurves();
  void updateRanges();
  bool perEvaluation(const Curve& c) const;
  bool smoothable(const Curve& c) const;

  PlotSpec spec_;
  QVector<PlotRun> runs_;
  QVector<Curve> curves_;
  double smoothing_ = 0;
  bool log_scale_ = false;
  bool user_view_ = false;  // zoomed or dragged: keep the range
  QCPTextElement* title_ = nullptr;
  QCPItemTracer* tracer_ = nullptr;
  QCPItemText* readout_ = nullptr;
  QColor text_colour_;
};

}  // namespace mrcnn::ui
