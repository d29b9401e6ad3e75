// Any bytes as an engine's output, line by line, into the GUI's run model (what the run
// monitor follows from the engine's stdout and events.jsonl): RunModel::addLine must apply
// events or return a warning; never crash, hang or read out of bounds; the derived values a
// view shows must stay computable.
#include <QString>
#include <cstdint>

#include "ui/run_monitor/run_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const QString text =
      QString::fromUtf8(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  mrcnn::ui::RunModel model;
  for (const QString& line : text.split(u'\n'))
    (void)model.addLine(line);
  (void)model.progress();
  (void)model.detailsLine();
  (void)model.statusLine();
  model.setProcessExit({});
  (void)model.statusLine();
  return 0;
}
