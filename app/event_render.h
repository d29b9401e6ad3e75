// The headless launcher's view of a run: turns the engine's stdout, line by line, into text
// for a terminal. Event lines (specs/events.proto) are rendered; any other line passes
// through unchanged.
//
// On a terminal (tty): a progress bar on the last line, redrawn in place (step/total,
// images/s, ETA, loss; images done/total for inference, whose progress has no losses); a line
// of the loss components at the first training progress event and then each time the step
// passes a multiple of `loss_every_steps` (the spec's report_frequency);
// evaluation tables (the 12 COCO stats by name, bbox beside segm, then AP per category);
// checkpoints, warnings, errors; a weights download's bar (bytes, rate, time left) until it
// is done; a final summary. Other text is printed above the bar.
// Not on a terminal: the same as plain lines, one per progress event, no control codes.
//
// Pure text in, text out (no I/O), so that tests can feed it lines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "specs/events.h"

namespace mrcnn::app {

struct RenderOptions {
  bool tty = false;
  int width = 100;            // terminal columns, for the bar
  int loss_every_steps = 50;  // tty: a loss line every N steps (the spec's report_frequency)
};

class EventRenderer {
 public:
  explicit EventRenderer(RenderOptions options = {});

  // One line of the engine's stdout, without its newline: what to write to the terminal.
  std::string line(std::string_view text);
  // The engine exited with `exit_code` (128+N: killed by signal N): commits the bar and, when
  // the engine could not say so itself (no `done` event), how it ended, with the summary.
  std::string finish(int exit_code);

  int warnings() const { return warnings_; }
  int errors() const { return errors_; }

  // "1h02m03s", "6m00s", "42s".
  static std::string duration(double seconds);

 private:
  std::string render(const events::Event& e);
  std::string start(const events::Event& e);
  std::string progressLine(const events::Event& e) const;
  std::string lossLine(const events::Event& e) const;
  std::string bar(const events::Event& e) const;
  // A weights download: its own bar (tty) until it is done; lines every few seconds otherwise.
  std::string download(const events::Event& e);
  std::string evalTable(const events::Event& e);
  std::string summary(const std::string& status, double elapsed) const;
  // Text printed above the bar (tty): clears the bar line, writes, redraws the bar.
  std::string printLine(const std::string& text);
  double etaSeconds(const events::Event& e) const;
  // What the task counts: "steps", or "images" for inference.
  std::string unit() const;
  // "step 20" for training steps, "images 3" for a task counting images.
  std::string counted(const events::Event& e) const;

  RenderOptions options_;
  std::string task_ = "task";
  uint64_t total_steps_ = 0;
  uint64_t start_step_ = 0;
  double start_time_ = 0;
  std::optional<events::Event> last_progress_;
  std::string bar_;  // the bar currently shown (tty), empty when none
  int progress_count_ = 0;
  std::optional<uint64_t> loss_line_step_;  // the step of the last loss line
  int evaluations_ = 0;
  int warnings_ = 0;
  int errors_ = 0;
  bool done_ = false;
  std::optional<std::pair<double, uint64_t>> best_bbox_, best_segm_;  // AP and its step
  std::string last_checkpoint_;
  std::optional<double> last_download_line_;  // event time of the last download line (no tty)
};

}  // namespace mrcnn::app
