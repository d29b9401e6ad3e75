#include "engine/events/event_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "io/write_error.h"

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

// Appends `data` to a file opened O_APPEND in one write(2). On a short write (a full disk)
// the partial data is cut back so that the file ends where it did; then throws naming `path`.
void appendWhole(int fd, const std::string& data, const std::filesystem::path& path) {
  struct stat st {};
  const off_t before = ::fstat(fd, &st) == 0 ? st.st_size : -1;
  ssize_t n;
  do {
    n = ::write(fd, data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(data.size())) return;
  int err = n < 0 ? errno : 0;
  if (n >= 0) {
    // A short write to a regular file: the next one says why (no space, the size limit).
    const ssize_t again = ::write(fd, data.data() + n, data.size() - static_cast<size_t>(n));
    err = again < 0 ? errno : ENOSPC;
  }
  if (before >= 0) {
    if (::ftruncate(fd, before) != 0) {
      // Nothing more to do: the error below says the file could not be written.
    }
  }
  io::throwWriteError(path, "cannot append", err, data.size());
}

int openAppend(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) io::throwWriteError(path, "cannot open", errno);
  return fd;
}

void stripTrailingNewlines(std::string* text) {
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r'))
    text->pop_back();
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// AP, AP50 and AP75 of a COCO summary; "-" where pycocotools has -1.
std::string apText(const events::CocoStats& s) {
  static constexpr const char* kNames[3] = {"AP", "AP50", "AP75"};
  std::string text;
  for (int i = 0; i < 3 && i < s.stats_size(); ++i) {
    if (i > 0) text += ' ';
    text += std::string(kNames[i]) + ' ' + (s.stats(i) < 0 ? "-" : format("%.3f", s.stats(i)));
  }
  return text;
}

}  // namespace

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(EventWriterOptions options) : options_(std::move(options)) {
  if (!active()) return;
  if (options_.text_log && options_.log_file.empty() && !options_.events_file.empty())
    options_.log_file = options_.events_file.parent_path() / "log.txt";
  if (!options_.text_log) options_.log_file.clear();
  if (!options_.events_file.empty()) fd_ = openAppend(options_.events_file);
  if (!options_.log_file.empty()) {
    try {
      log_fd_ = openAppend(options_.log_file);
    } catch (...) {
      if (fd_ >= 0) ::close(fd_);
      throw;
    }
  }
  if (options_.stdout_fd >= 0) ::signal(SIGPIPE, SIG_IGN);
}

EventWriter::~EventWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (log_fd_ >= 0) ::close(log_fd_);
}

void EventWriter::write(events::Event event) {
  if (!active()) return;
  if (event.time() == 0) event.set_time(unixNow());
  if (event.type() == "log") stripTrailingNewlines(event.mutable_text());

  std::lock_guard lock(mutex_);
  if (event.type() == "start") {
    task_ = event.task();
    total_steps_ = event.total_steps();
  }
  std::string text;
  if (log_fd_ >= 0) {
    // Every line of the readable form carries the time, so that log.txt greps well.
    const std::string stamp = localTimestamp(event.time()) + "  ";
    const std::string body = eventText(event, task_, total_steps_);
    size_t start = 0;
    do {
      const size_t end = body.find('\n', start);
      text += stamp;
      text.append(body, start, end == std::string::npos ? std::string::npos : end - start);
      text += '\n';
      start = end == std::string::npos ? std::string::npos : end + 1;
    } while (start != std::string::npos);
  }
  const bool listened = !listeners_.empty();
  std::string line = events::toJsonLine(listened ? events::Event(event) : std::move(event));
  line += '\n';

  if (options_.stdout_fd >= 0) {
    // Text the engine printed through stdio comes out before the event, in order.
    std::fflush(stdout);
    writeAll(options_.stdout_fd, line.data(), line.size());
  }
  if (fd_ >= 0) appendWhole(fd_, line, options_.events_file);
  if (log_fd_ >= 0) appendWhole(log_fd_, text, options_.log_file);
  if (listened) {
    for (const Listener& listener : listeners_)
      listener(event);
  }
}

void EventWriter::addListener(Listener listener) {
  std::lock_guard lock(mutex_);
  listeners_.push_back(std::move(listener));
}

std::string localTimestamp(double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  const int millis =
      std::min(999, static_cast<int>((unix_seconds - static_cast<double>(whole)) * 1000.0));
  std::tm tm{};
  ::localtime_r(&whole, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03d", millis);
  return buf;
}

namespace {
// "1.2345 (rpn_objectness 0.1000, rpn_box ..., mask 0.3000)"
std::string lossText(const events::Losses& l) {
  return format("%.4f", l.total()) + " (rpn_objectness " + format("%.4f", l.rpn_objectness()) +
         ", rpn_box " + format("%.4f", l.rpn_box()) + ", fast_rcnn_class " +
         format("%.4f", l.fast_rcnn_class()) + ", fast_rcnn_box " +
         format("%.4f", l.fast_rcnn_box()) + ", mask " + format("%.4f", l.mask()) + ")";
}
}  // namespace

std::string eventText(const events::Event& e, const std::string& task, uint64_t total_steps) {
  const std::string& type = e.type();
  std::string t;
  if (type == "start") {
    t = "start " + (e.task().empty() ? std::string("task") : e.task()) + " on " +
        (e.device().empty() ? std::string("?") : e.device());
    if (e.world_size() > 1) t += " (" + std::to_string(e.world_size()) + " processes)";
    const std::string unit = e.task() == "inference" ? " images" : " steps";
    if (e.start_step() > 0) {
      t += ": resuming at step " + std::to_string(e.start_step()) + " of " +
           std::to_string(e.total_steps());
    } else if (e.total_steps() > 0) {
      t += ": " + std::to_string(e.total_steps()) + unit;
    }
    if (!e.spec_path().empty()) t += "; spec " + e.spec_path();
    if (!e.run_dir().empty()) t += "; run directory " + e.run_dir();
    if (!e.engine_version().empty()) t += "; engine " + e.engine_version();
    if (e.spec_changes_size() > 0) {
      t += "\nthe spec changed since the last start; from step " + std::to_string(e.start_step()) +
           " on:";
      for (const events::SpecChange& c : e.spec_changes())
        t += "\n  " + c.field() + ": " + c.before() + " -> " + c.after();
    }
    return t;
  }
  if (type == "progress") {
    const std::string of = total_steps > 0 ? "/" + std::to_string(total_steps) : "";
    if (!e.has_losses()) {  // a task counting items
      t = (task == "inference" ? "images " : "step ") + std::to_string(e.step()) + of;
    } else {
      t = "step " + std::to_string(e.step()) + of + "  epoch " + std::to_string(e.epoch()) +
          "  lr " + format("%.5g", e.lr()) + "  loss " + lossText(e.losses());
    }
    if (e.images_per_second() > 0) t += "  " + format("%.2f", e.images_per_second()) + " img/s";
    if (e.data_wait_share() > 0)
      t += "  data wait " + format("%.0f", 100 * e.data_wait_share()) + "%";
    if (e.eta_seconds() > 0) t += "  ETA " + events::formatDuration(e.eta_seconds());
    if (e.skipped_steps() > 0) t += "  skipped steps " + std::to_string(e.skipped_steps());
    if (e.loss_scale() > 0) t += "  loss scale " + format("%g", e.loss_scale());
    if (e.memory().rss_mib() > 0) t += "  rss " + format("%.0f", e.memory().rss_mib()) + " MiB";
    if (e.memory().device_mib() > 0)
      t += "  gpu " + format("%.0f", e.memory().device_mib()) + " MiB";
    return t;
  }
  if (type == "eval") {
    t = "eval at step " + std::to_string(e.step());
    if (e.images() > 0) t += " on " + std::to_string(e.images()) + " images";
    t += ": bbox " + apText(e.bbox());
    if (e.has_segm() && e.segm().stats_size() > 0) t += "; segm " + apText(e.segm());
    if (!e.metrics_path().empty()) t += "; metrics " + e.metrics_path();
    if (e.has_val_losses()) t += "\n  validation loss " + lossText(e.val_losses());
    // AP per category, by id (protobuf maps have no order).
    std::map<int64_t, double> bbox(e.bbox().per_category_ap().begin(),
                                   e.bbox().per_category_ap().end());
    if (!bbox.empty()) {
      t += "\n  AP per category (bbox";
      t += e.segm().per_category_ap().empty() ? "):" : "/segm):";
      for (const auto& [id, ap] : bbox) {
        const auto name = e.bbox().category_names().find(id);
        t += ' ';
        t += name != e.bbox().category_names().end() ? name->second
                                                     : "category " + std::to_string(id);
        t += ' ' + (ap < 0 ? std::string("-") : format("%.3f", ap));
        const auto segm = e.segm().per_category_ap().find(id);
        if (segm != e.segm().per_category_ap().end())
          t += '/' + (segm->second < 0 ? std::string("-") : format("%.3f", segm->second));
      }
    }
    return t;
  }
  if (type == "checkpoint") {
    return "checkpoint at step " + std::to_string(e.step()) + ": " + e.path() +
           (e.best() ? " (best so far)" : "");
  }
  if (type == "warning" || type == "error") {
    t = type + (e.code().empty() ? std::string() : " [" + e.code() + "]") + ": " + e.message();
    if (e.image_id() != 0 || e.annotation_id() != 0) {
      t += " (";
      if (e.image_id() != 0) t += "image " + std::to_string(e.image_id());
      if (e.image_id() != 0 && e.annotation_id() != 0) t += ", ";
      if (e.annotation_id() != 0) t += "annotation " + std::to_string(e.annotation_id());
      t += ")";
    }
    if (type == "error" && e.exit_code() != 0)
      t += " (exit code " + std::to_string(e.exit_code()) + ")";
    return t;
  }
  if (type == "done") {
    t = "done: " + (e.status().empty() ? std::string("ok") : e.status());
    if (e.elapsed_seconds() > 0) t += " after " + events::formatDuration(e.elapsed_seconds());
    if (!e.summary().empty()) t += ": " + e.summary();
    return t;
  }
  if (type == "log") {
    t = e.text();
    stripTrailingNewlines(&t);
    return t;
  }
  return "[" + type + "]";
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
                        const CocoSummary* segm, const std::string& metrics_path,
                        const LossValues* val_losses) {
  events::Event e;
  e.set_type("eval");
  e.set_step(step);
  e.set_images(images);
  fillStats(bbox, e.mutable_bbox());
  if (segm) fillStats(*segm, e.mutable_segm());
  e.set_metrics_path(metrics_path);
  if (val_losses) {
    events::Losses* l = e.mutable_val_losses();
    l->set_total(val_losses->total);
    l->set_rpn_objectness(val_losses->rpn_objectness);
    l->set_rpn_box(val_losses->rpn_box);
    l->set_fast_rcnn_class(val_losses->fast_rcnn_class);
    l->set_fast_rcnn_box(val_losses->fast_rcnn_box);
    l->set_mask(val_losses->mask);
  }
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

events::Event itemProgressEvent(uint64_t done, double items_per_second, double eta_seconds,
                                double rss_mib) {
  events::Event e;
  e.set_type("progress");
  e.set_step(done);
  e.set_images_per_second(items_per_second);
  e.set_eta_seconds(eta_seconds);
  if (rss_mib > 0) e.mutable_memory()->set_rss_mib(rss_mib);
  return e;
}

events::Event logEvent(const std::string& text) {
  events::Event e;
  e.set_type("log");
  std::string line = text;
  stripTrailingNewlines(&line);
  e.set_text(std::move(line));
  return e;
}

}  // namespace mrcnn::train
