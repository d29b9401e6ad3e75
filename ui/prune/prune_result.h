// What a prune produced: its status.json read back (pruning ratio, parameters, size, GFLOPs
// before and after, each layer's kept filters), shown in a dialog with the per-layer table,
// and the spec that retrains it (the run's spec as run, with pruned_model_path set to the
// pruned model and a run name of its own).
#pragma once

#include <QDialog>
#include <QList>
#include <QString>
#include <optional>

class QLabel;
class QTableWidget;

namespace mrcnn::ui {

struct PruneStatus {
  struct Layer {
    QString name;
    QString group;
    qint64 filters = 0;
    qint64 kept = 0;
    bool excluded = false;
  };
  QString dir;               // the prune's output folder
  QString weights;           // the checkpoint it pruned (absolute, as the engine wrote it)
  double pruning_ratio = 0;  // parameters after / before
  qint64 param_count = 0, param_count_before = 0;
  qint64 size = 0;  // model.pt's bytes
  double gflops = 0, gflops_before = 0;
  double threshold = 0;
  QList<Layer> layers;

  // One line: ratio, parameters, GFLOPs.
  QString summary() const;
};

// Reads <dir>/status.json; nullopt with the reason (naming the file) when it cannot.
std::optional<PruneStatus> readPruneStatus(const QString& dir, QString* error = nullptr);

// The training run whose checkpoint was pruned: <run> when the weights are
// <run>/checkpoints/<file> and <run>/spec.txt exists; empty otherwise (weights from elsewhere).
QString sourceRunOf(const PruneStatus& status);

// Writes the retrain spec for the model pruned into `pruneDir` from the run `runDir` (its
// spec.txt as run): pruned_model_path = <pruneDir>/model.pt, run_name = <run>_retrain (-2,
// -3, ... when that run directory exists), the spec's checkpoint cleared (the pruned model
// gives the weights). Returns the written file (<pruneDir>/retrain_spec.txt), or empty with
// the reason.
QString writeRetrainSpec(const QString& runDir, const QString& pruneDir, QString* error = nullptr);

// The result of a prune: the summary, the per-layer table (layer, kept, filters, group) and
// Retrain…, which writes the retrain spec and asks for it to be opened (disabled when `runDir`
// is empty: weights that came from no run).
class PruneResultDialog : public QDialog {
  Q_OBJECT

 public:
  PruneResultDialog(const QString& runDir, const PruneStatus& status, QWidget* parent = nullptr);

  QTableWidget* table() const { return table_; }
  QString summaryText() const;
  // What Retrain… does (a test calls it): writes the spec, emits retrainSpecReady.
  void retrain();

 signals:
  void retrainSpecReady(const QString& specPath);

 private:
  QString run_dir_;
  PruneStatus status_;
  QLabel* summary_ = nullptr;
  QLabel* problem_ = nullptr;
  QTableWidget* table_ = nullptr;
};

}  // namespace mrcnn::ui
