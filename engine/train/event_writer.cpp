#include "engine/train/event_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace mrcnn::train {
namespace {

// Writes all of `data` (pipes may take it in parts); false on an error.
bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(EventWriterOptions options) : options_(std::move(options)) {
  if (!active()) return;
  if (!options_.events_file.empty()) {
    fd_ = ::open(options_.events_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::runtime_error("cannot open " + options_.events_file.string() + ": " +
                               std::strerror(errno));
  }
  if (options_.stdout_fd >= 0) ::signal(SIGPIPE, SIG_IGN);
}

EventWriter::~EventWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void EventWriter::write(events::Event event) {
  if (!active()) return;
  if (event.time() == 0) event.set_time(unixNow());
  std::string line = events::toJsonLine(std::move(event));
  line += '\n';

  std::lock_guard lock(mutex_);
  if (options_.stdout_fd >= 0) {
    // Text the engine printed through stdio comes out before the event, in order.
    std::fflush(stdout);
    writeAll(options_.stdout_fd, line.data(), line.size());
  }
  if (fd_ < 0) return;
  struct stat st {};
  const off_t before = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  ssize_t n;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(line.size())) return;
  const int err = n < 0 ? errno : ENOSPC;  // a short write on a regular file: out of space
  if (n > 0 && before >= 0) {
    // Take the partial line back so the file ends on a whole line.
    if (::ftruncate(fd_, before) != 0) {
      // Nothing more to do: the error below says the file could not be written.
    }
  }
  throw std::runtime_error("cannot append to " + options_.events_file.string() + ": " +
                           std::strerror(err));
}

events::Event startEvent(const std::string& task, const std::string& spec_path,
                         const std::string& run_dir, const std::string& device, uint32_t world_size,
                         uint64_t total_steps, uint64_t start_step,
                         const std::string& engine_version) {
  events::Event e;
  e.set_type("start");
  e.set_task(task);
  e.set_spec_path(spec_path);
  e.set_run_dir(run_dir);
  e.set_device(device);
  e.set_world_size(world_size);
  e.set_total_steps(total_steps);
  e.set_start_step(start_step);
  e.set_engine_version(engine_version);
  return e;
}

events::Event progressEvent(const ProgressInfo& info) {
  events::Event e;
  e.set_type("progress");
  e.set_step(info.step);
  e.set_epoch(info.epoch);
  e.set_lr(info.lr);
  events::Losses* l = e.mutable_losses();
  l->set_total(info.loss_total);
  l->set_rpn_objectness(info.loss_rpn_objectness);
  l->set_rpn_box(info.loss_rpn_box);
  l->set_fast_rcnn_class(info.loss_fast_rcnn_class);
  l->set_fast_rcnn_box(info.loss_fast_rcnn_box);
  l->set_mask(info.loss_mask);
  e.set_images_per_second(info.images_per_second);
  e.set_data_wait_share(info.data_wait_share);
  e.set_eta_seconds(info.eta_seconds);
  events::Memory* m = e.mutable_memory();
  m->set_rss_mib(info.rss_mib);
  m->set_device_mib(info.device_mib);
  m->set_device_peak_mib(info.device_peak_mib);
  e.set_skipped_steps(info.skipped_steps);
  e.set_loss_scale(info.loss_scale);
  return e;
}

namespace {
void fillStats(const CocoSummary& s, events::CocoStats* out) {
  for (double v : s.stats)
    out->add_stats(v);
  for (const auto& [id, ap] : s.per_category_ap)
    (*out->mutable_per_category_ap())[id] = ap;
  for (const auto& [id, name] : s.category_names)
    (*out->mutable_category_names())[id] = name;
}
}  // namespace

events::Event evalEvent(uint64_t step, uint64_t images, const CocoSummary& bbox,
                        const CocoSummary* segm, const std::string& metrics_path) {
  events::Event e;
  e.set_type("eval");
  e.set_step(step);
  e.set_images(images);
  fillStats(bbox, e.mutable_bbox());
  if (segm) fillStats(*segm, e.mutable_segm());
  e.set_metrics_path(metrics_path);
  return e;
}

events::Event checkpointEvent(const std::string& path, uint64_t step, bool best) {
  events::Event e;
  e.set_type("checkpoint");
  e.set_path(path);
  e.set_step(step);
  e.set_best(best);
  return e;
}

events::Event warningEvent(const std::string& code, const std::string& message, int64_t image_id,
                           int64_t annotation_id) {
  events::Event e;
  e.set_type("warning");
  e.set_code(code);
  e.set_message(message);
  e.set_image_id(image_id);
  e.set_annotation_id(annotation_id);
  return e;
}

events::Event errorEvent(const std::string& code, const std::string& message, uint32_t exit_code) {
  events::Event e;
  e.set_type("error");
  e.set_code(code);
  e.set_message(message);
  e.set_exit_code(exit_code);
  return e;
}

events::Event doneEvent(const std::string& status, const std::string& summary,
                        double elapsed_seconds) {
  events::Event e;
  e.set_type("done");
  e.set_status(status);
  e.set_summary(summary);
  e.set_elapsed_seconds(elapsed_seconds);
  return e;
}

events::Event logEvent(const std::string& text) {
  events::Event e;
  e.set_type("log");
  e.set_text(text);
  return e;
}

}  // namespace mrcnn::train
