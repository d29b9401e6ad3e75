// The engine's events (specs/events.proto, ../shared/DESIGN.md "Events"): each event is one
// JSON line written to stdout (for the GUI or the headless launcher reading the pipe) and
// appended to <run dir>/events.jsonl, and its readable form (eventText) appended to
// <run dir>/log.txt, each line there prefixed with the event's local time. Every task that
// writes events gets its log.txt this way, without code of its own. Only rank 0 of a
// distributed run writes.
//
// Neither file ever holds a torn line: each is opened O_APPEND and an event goes out in one
// write(2) per file; a short write (a full disk) is cut back to the previous end of the file
// before the error is reported. Thread-safe: lines from several threads never interleave.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/loss_values.h"
#include "specs/events.h"

namespace mrcnn::train {

struct EventWriterOptions {
  // {events_file, stdout_fd, rank} as before log.txt existed, the log then beside the file.
  EventWriterOptions(std::filesystem::path events_file_ = {}, int stdout_fd_ = 1, int rank_ = 0)
      : events_file(std::move(events_file_)), stdout_fd(stdout_fd_), rank(rank_) {}

  std::filesystem::path events_file;  // appended to; empty: no file
  int stdout_fd = 1;                  // where the line is echoed; -1: nowhere
  int rank = 0;                       // only rank 0 writes
  // The readable log, appended to. Empty: log.txt beside events_file (none without one).
  std::filesystem::path log_file;
  bool text_log = true;  // false: no readable log at all
};

class EventWriter {
 public:
  // Opens (creates) the events file and the log. Throws std::runtime_error naming the file and the
  // system's reason. With stdout echo on, SIGPIPE is ignored process-wide: a reader that
  // went away (the GUI closed) must not kill a training run, whose events file goes on.
  explicit EventWriter(EventWriterOptions options);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Sets v (protocol version) and time (now, when 0) and writes the line; a log event's text
  // loses its trailing newlines. Throws std::runtime_error naming events.jsonl or log.txt
  // when one cannot be appended to (the file is then as it was); a failing stdout is
  // ignored.
  void write(events::Event event);

  // Called with each event written, after the files (e.g. the TensorBoard writer); under the
  // writer's lock, so events reach a listener in order. What it throws reaches write()'s caller.
  using Listener = std::function<void(const events::Event&)>;
  void addListener(Listener listener);

  bool active() const { return options_.rank == 0; }
  const std::filesystem::path& eventsFile() const { return options_.events_file; }
  const std::filesystem::path& logFile() const { return options_.log_file; }

 private:
  EventWriterOptions options_;
  int fd_ = -1;
  int log_fd_ = -1;
  std::mutex mutex_;
  std::vector<Listener> listeners_;
  // From the last start event: progress lines in log.txt say "of N".
  std::string task_;
  uint64_t total_steps_ = 0;
};

// Unix time in seconds, with sub-second precision.
double unixNow();

// An event as text for people (log.txt; without a timestamp): one line, or several for a
// log event of several lines. `total_steps` (from the start event; 0: unknown) completes the
// progress line, `task` names what is counted (images for inference, steps otherwise).
std::string eventText(const events::Event& event, const std::string& task = {},
                      uint64_t total_steps = 0);

// "2026-11-22 05:41:34.123": unix seconds in local time, as log.txt prefixes its lines.
std::string localTimestamp(double unix_seconds);

// Builders of each event type (time and v are filled in by write()).
events::Event startEvent(const std::string& task, const std::string& spec_path,
                         const std::string& run_dir, const std::string& device, uint32_t world_size,
                         uint64_t total_steps, uint64_t start_step,
                         const std::string& engine_version);

struct ProgressInfo {
  uint64_t step = 0;
  uint64_t epoch = 0;
  double lr = 0;
  // total, rpn_objectness, rpn_box, fast_rcnn_class, fast_rcnn_box, mask
  double loss_total = 0, loss_rpn_objectness = 0, loss_rpn_box = 0, loss_fast_rcnn_class = 0,
         loss_fast_rcnn_box = 0, loss_mask = 0;
  double images_per_second = 0;
  double data_wait_share = 0;
  double eta_seconds = 0;
  double rss_mib = 0, device_mib = 0, device_peak_mib = 0;
  uint64_t skipped_steps = 0;  // fp16
  double loss_scale = 0;       // fp16; 0 when not scaling
};
events::Event progressEvent(const ProgressInfo& info);
// Progress of a task that counts items (inference: images) rather than training steps: no
// losses, so that readers can tell them apart (has_losses()).
events::Event itemProgressEvent(uint64_t done, double items_per_second, double eta_seconds,
                                double rss_mib = 0);

// The 12 COCO stats in pycocotools' order, with per-category AP and names by category id.
struct CocoSummary {
  std::vector<double> stats;
  std::map<int64_t, double> per_category_ap;
  std::map<int64_t, std::string> category_names;
};
// `segm` may be null (box-only models); `val_losses` null when the evaluation computed none.
events::Event evalEvent(uint64_t step, uint64_t images, const CocoSummary& bbox,
                        const CocoSummary* segm, const std::string& metrics_path,
                        const LossValues* val_losses = nullptr);

events::Event checkpointEvent(const std::string& path, uint64_t step, bool best);
// image_id / annotation_id: 0 when the warning concerns none.
events::Event warningEvent(const std::string& code, const std::string& message,
                           int64_t image_id = 0, int64_t annotation_id = 0);
events::Event errorEvent(const std::string& code, const std::string& message, uint32_t exit_code);
// status: ok | stopped | failed.
events::Event doneEvent(const std::string& status, const std::string& summary,
                        double elapsed_seconds);
// Trailing newlines are dropped: a log event is a line (or lines), never ending in an empty
// one.
events::Event logEvent(const std::string& text);

}  // namespace mrcnn::train
