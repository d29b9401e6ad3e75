// The engine's events (specs/events.proto, ../shared/DESIGN.md "Events"): each event is one
// JSON line written to stdout (for the GUI or the headless launcher reading the pipe) and
// appended to <run dir>/events.jsonl. Only rank 0 of a distributed run writes.
//
// events.jsonl never holds a torn line: the file is opened O_APPEND and each line goes out in
// one write(2); a short write (a full disk) is cut back to the previous end of the file
// before the error is reported. Thread-safe: lines from several threads never interleave.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "specs/events.h"

namespace mrcnn::train {

struct EventWriterOptions {
  std::filesystem::path events_file;  // appended to; empty: no file
  int stdout_fd = 1;                  // where the line is echoed; -1: nowhere
  int rank = 0;                       // only rank 0 writes
};

class EventWriter {
 public:
  // Opens (creates) the events file. Throws std::runtime_error naming the file and the
  // system's reason. With stdout echo on, SIGPIPE is ignored process-wide: a reader that
  // went away (the GUI closed) must not kill a training run, whose events file goes on.
  explicit EventWriter(EventWriterOptions options);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Sets v (protocol version) and time (now, when 0) and writes the line. Throws
  // std::runtime_error naming events.jsonl when it cannot be appended to (the file is then
  // as it was); a failing stdout is ignored.
  void write(events::Event event);

  bool active() const { return options_.rank == 0; }
  const std::filesystem::path& eventsFile() const { return options_.events_file; }

 private:
  EventWriterOptions options_;
  int fd_ = -1;
  std::mutex mutex_;
};

// Unix time in seconds, with sub-second precision.
double unixNow();

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

// The 12 COCO stats in pycocotools' order, with per-category AP and names by category id.
struct CocoSummary {
  std::vector<double> stats;
  std::map<int64_t, double> per_category_ap;
  std::map<int64_t, std::string> category_names;
};
// `segm` may be null (box-only models).
events::Event evalEvent(uint64_t step, uint64_t images, const CocoSummary& bbox,
                        const CocoSummary* segm, const std::string& metrics_path);

events::Event checkpointEvent(const std::string& path, uint64_t step, bool best);
// image_id / annotation_id: 0 when the warning concerns none.
events::Event warningEvent(const std::string& code, const std::string& message,
                           int64_t image_id = 0, int64_t annotation_id = 0);
events::Event errorEvent(const std::string& code, const std::string& message, uint32_t exit_code);
// status: ok | stopped | failed.
events::Event doneEvent(const std::string& status, const std::string& summary,
                        double elapsed_seconds);
events::Event logEvent(const std::string& text);

}  // namespace mrcnn::train
