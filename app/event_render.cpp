#include "app/event_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "io/transfer_text.h"

namespace mrcnn::app {
namespace {

// pycocotools' 12 summary lines, in its order.
struct StatName {
  const char* name;
  const char* what;
};
constexpr StatName kStats[12] = {
    {"AP", "IoU=0.50:0.95  area=all     maxDets=100"},
    {"AP50", "IoU=0.50       area=all     maxDets=100"},
    {"AP75", "IoU=0.75       area=all     maxDets=100"},
    {"APs", "IoU=0.50:0.95  area=small   maxDets=100"},
    {"APm", "IoU=0.50:0.95  area=medium  maxDets=100"},
    {"APl", "IoU=0.50:0.95  area=large   maxDets=100"},
    {"AR1", "IoU=0.50:0.95  area=all     maxDets=1"},
    {"AR10", "IoU=0.50:0.95  area=all     maxDets=10"},
    {"AR100", "IoU=0.50:0.95  area=all     maxDets=100"},
    {"ARs", "IoU=0.50:0.95  area=small   maxDets=100"},
    {"ARm", "IoU=0.50:0.95  area=medium  maxDets=100"},
    {"ARl", "IoU=0.50:0.95  area=large   maxDets=100"},
};
constexpr int kMaxCategoryRows = 30;
constexpr const char* kClearLine = "\r\033[K";

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A COCO stat: 3 decimals, "-" where pycocotools has -1 (no such objects).
std::string stat(const events::CocoStats& s, int i) {
  if (i >= s.stats_size()) return "";
  const double v = s.stats(i);
  return v < 0 ? "-" : format("%.3f", v);
}

std::string padLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}
std::string padRight(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string loss(double v) {
  return format(std::abs(v) >= 100 ? "%.1f" : "%.4f", v);
}

// The components of a loss, as the tables print them.
std::string lossParts(const events::Losses& l) {
  return "(rpn_obj " + loss(l.rpn_objectness()) + "  rpn_box " + loss(l.rpn_box()) + "  cls " +
         loss(l.fast_rcnn_class()) + "  box " + loss(l.fast_rcnn_box()) + "  mask " +
         loss(l.mask()) + ")";
}

}  // namespace

EventRenderer::EventRenderer(RenderOptions options) : options_(options) {
  if (options_.loss_every_steps < 1) options_.loss_every_steps = 1;
  if (options_.width < 40) options_.width = 40;
}

std::string EventRenderer::duration(double seconds) {
  return events::formatDuration(seconds);
}

std::string EventRenderer::printLine(const std::string& text) {
  if (!options_.tty || bar_.empty()) return text + "\n";
  return kClearLine + text + "\n" + bar_;
}

std::string EventRenderer::line(std::string_view text) {
  // Only a line that starts as a JSON object can be an event; everything else is the
  // engine's own text (the resolved spec, pycocotools-style tables...).
  size_t first = text.find_first_not_of(" \t");
  if (first != std::string_view::npos && text[first] == '{') {
    if (auto event = events::parseJsonLine(text)) return render(*event);
  }
  return printLine(std::string(text));
}

std::string EventRenderer::render(const events::Event& e) {
  const std::string& type = e.type();
  if (type == "start") return printLine(start(e));
  if (type == "progress") {
    ++progress_count_;
    last_progress_ = e;
    if (!options_.tty) return progressLine(e) + "\n";
    std::string out;
    const uint64_t every = static_cast<uint64_t>(options_.loss_every_steps);
    if (e.has_losses() && (!loss_line_step_ || e.step() / every > *loss_line_step_ / every)) {
      loss_line_step_ = e.step();
      out += kClearLine + lossLine(e) + "\n";
    } else {
      out += kClearLine;
    }
    bar_ = bar(e);
    return out + bar_;
  }
  if (type == "download") return download(e);
  if (type == "eval") return printLine(evalTable(e));
  if (type == "checkpoint") {
    last_checkpoint_ = e.path();
    return printLine("checkpoint at step " + std::to_string(e.step()) + ": " + e.path() +
                     (e.best() ? "  (best so far)" : ""));
  }
  if (type == "warning") {
    ++warnings_;
    std::string text = "warning: " + (e.code().empty() ? "" : "[" + e.code() + "] ") + e.message();
    if (e.image_id() != 0 || e.annotation_id() != 0) {
      text += " (";
      if (e.image_id() != 0) text += "image " + std::to_string(e.image_id());
      if (e.image_id() != 0 && e.annotation_id() != 0) text += ", ";
      if (e.annotation_id() != 0) text += "annotation " + std::to_string(e.annotation_id());
      text += ")";
    }
    return printLine(text);
  }
  if (type == "error") {
    ++errors_;
    return printLine("error: " + (e.code().empty() ? "" : "[" + e.code() + "] ") + e.message());
  }
  if (type == "done") {
    done_ = true;
    // The bar is committed as it last was; the summary goes below it.
    std::string out = options_.tty && !bar_.empty() ? "\n" : "";
    bar_.clear();
    double elapsed = e.elapsed_seconds();
    if (elapsed == 0 && start_time_ > 0 && e.time() > start_time_) elapsed = e.time() - start_time_;
    out += summary(e.status().empty() ? "ok" : e.status(), elapsed);
    if (!e.summary().empty()) out += "  " + e.summary() + "\n";
    return out;
  }
  if (type == "log") {
    // The text is a line (or lines) of its own: a trailing newline is not an empty line.
    std::string text = e.text();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    return text.empty() ? std::string() : printLine(text);
  }
  // A type this launcher does not know (a newer engine): say what it is, briefly.
  return printLine("[" + type + "]");
}

std::string EventRenderer::start(const events::Event& e) {
  task_ = e.task().empty() ? "task" : e.task();
  total_steps_ = e.total_steps();
  start_step_ = e.start_step();
  start_time_ = e.time();
  std::string text = task_ + " on " + (e.device().empty() ? "?" : e.device());
  if (e.world_size() > 1) text += " (" + std::to_string(e.world_size()) + " processes)";
  if (total_steps_ > 0) {
    text += start_step_ > 0 ? ": resuming at step " + std::to_string(start_step_) + " of " +
                                  std::to_string(total_steps_)
                            : ": " + std::to_string(total_steps_) + " " + unit();
  }
  if (!e.run_dir().empty()) text += "; run directory " + e.run_dir();
  if (e.spec_changes_size() > 0) {
    text += "\n  changed since the last start (from step " + std::to_string(start_step_) + " on):";
    for (const events::SpecChange& c : e.spec_changes())
      text += "\n    " + c.field() + ": " + c.before() + " -> " + c.after();
  }
  return text;
}

double EventRenderer::etaSeconds(const events::Event& e) const {
  if (e.eta_seconds() > 0) return e.eta_seconds();
  // From the pace since the start event, when the engine does not say.
  if (start_time_ > 0 && e.time() > start_time_ && e.step() > start_step_ &&
      total_steps_ > e.step())
    return (e.time() - start_time_) / static_cast<double>(e.step() - start_step_) *
           static_cast<double>(total_steps_ - e.step());
  return -1;
}

std::string EventRenderer::unit() const {
  return task_ == "inference" ? "images" : "steps";
}

std::string EventRenderer::counted(const events::Event& e) const {
  // A task counting items (inference: images) sends progress without losses.
  return (e.has_losses() || task_ != "inference" ? "step " : "images ") + std::to_string(e.step());
}

std::string EventRenderer::progressLine(const events::Event& e) const {
  std::string text = counted(e);
  if (total_steps_ > 0) {
    text += "/" + std::to_string(total_steps_) +
            format(" (%.0f%%)",
                   100.0 * static_cast<double>(e.step()) / static_cast<double>(total_steps_));
  }
  if (e.images_per_second() > 0) text += format("  %.2f img/s", e.images_per_second());
  const double eta = etaSeconds(e);
  if (eta >= 0) text += "  ETA " + duration(eta);
  return e.has_losses() ? text + "  " + lossLine(e) : text;
}

namespace {

// "[#####.....]": `fraction` (clamped to 0..1) of at most 40 cells, in `room` columns.
std::string cellBar(double fraction, int room) {
  const int cells = std::min(room, 40);
  const double done = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(std::floor(done * cells));
  return "[" + std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(cells - filled), '.') + "]";
}

}  // namespace

std::string EventRenderer::lossLine(const events::Event& e) const {
  const events::Losses& l = e.losses();
  std::string text;
  if (options_.tty) text = "step " + std::to_string(e.step()) + "  ";
  text += "lr " + format("%.5g", e.lr()) + "  loss " + loss(l.total()) + "  " + lossParts(l);
  if (e.data_wait_share() > 0) text += format("  data wait %.0f%%", 100 * e.data_wait_share());
  if (e.skipped_steps() > 0 || e.loss_scale() > 0) {
    text += "  skipped " + std::to_string(e.skipped_steps());
    if (e.loss_scale() > 0) text += format(" (loss scale %g)", e.loss_scale());
  }
  if (e.memory().device_mib() > 0) text += format("  gpu %.0f MiB", e.memory().device_mib());
  return text;
}

std::string EventRenderer::bar(const events::Event& e) const {
  std::string left = counted(e);
  std::string right;
  if (total_steps_ > 0) {
    left += "/" + std::to_string(total_steps_);
    right = format("%3.0f%%",
                   100.0 * static_cast<double>(e.step()) / static_cast<double>(total_steps_));
  }
  if (e.images_per_second() > 0) right += format("  %.2f img/s", e.images_per_second());
  const double eta = etaSeconds(e);
  if (eta >= 0) right += "  ETA " + duration(eta);
  if (e.has_losses()) right += "  loss " + loss(e.losses().total());
  // The bar takes what the line has left, at most 40 columns, at least 10.
  const int room = options_.width - 1 - static_cast<int>(left.size() + right.size()) - 4;
  if (total_steps_ == 0 || room < 10)
    return (left + " " + right).substr(0, static_cast<size_t>(options_.width - 1));
  return left + " " +
         cellBar(static_cast<double>(e.step()) / static_cast<double>(total_steps_), room) + " " +
         right;
}

std::string EventRenderer::download(const events::Event& e) {
  const events::Download& d = e.download();
  const std::string left = "downloading " + d.name();
  const std::string right =
      io::transferText(d.bytes(), d.total_bytes(), d.bytes_per_second(), d.eta_seconds(), d.done());
  if (!options_.tty) {
    // A line at the first report, every 5 s of the download and at its end: a log file gets
    // the story, not a line for each of the events.
    if (!d.done() && last_download_line_ && e.time() - *last_download_line_ < 5) return {};
    last_download_line_ = d.done() ? std::optional<double>() : std::optional<double>(e.time());
    return left + ": " + right + "\n";
  }
  const int room = options_.width - 1 - static_cast<int>(left.size() + right.size()) - 4;
  std::string line = left + " ";
  if (d.total_bytes() > 0 && room >= 10)
    line += cellBar(static_cast<double>(d.bytes()) / static_cast<double>(d.total_bytes()), room) + " ";
  line = (line + right).substr(0, static_cast<size_t>(options_.width - 1));
  if (d.done()) {
    // Committed: the task's own bar comes below it.
    bar_.clear();
    return kClearLine + line + "\n";
  }
  bar_ = line;
  return kClearLine + bar_;
}

std::string EventRenderer::evalTable(const events::Event& e) {
  ++evaluations_;
  const bool has_segm = e.has_segm() && e.segm().stats_size() > 0;
  if (e.bbox().stats_size() > 0) {
    const double ap = e.bbox().stats(0);
    if (!best_bbox_ || ap > best_bbox_->first) best_bbox_ = {ap, e.step()};
  }
  if (has_segm) {
    const double ap = e.segm().stats(0);
    if (!best_segm_ || ap > best_segm_->first) best_segm_ = {ap, e.step()};
  }
  std::ostringstream o;
  o << "evaluation at step " << e.step();
  if (e.images() > 0) o << " on " << e.images() << " images";
  if (!e.metrics_path().empty()) o << " (" << e.metrics_path() << ")";
  o << "\n  " << padRight("", 6) << padRight("", 40) << padLeft("bbox", 7)
    << (has_segm ? padLeft("segm", 8) : "") << "\n";
  for (int i = 0; i < 12; ++i) {
    o << "  " << padRight(kStats[i].name, 6) << padRight(kStats[i].what, 40)
      << padLeft(stat(e.bbox(), i), 7) << (has_segm ? padLeft(stat(e.segm(), i), 8) : "") << "\n";
  }
  // AP per category, by id, named when the engine gave names.
  std::map<int64_t, std::pair<std::optional<double>, std::optional<double>>> per;
  for (const auto& [id, ap] : e.bbox().per_category_ap())
    per[id].first = ap;
  if (has_segm)
    for (const auto& [id, ap] : e.segm().per_category_ap())
      per[id].second = ap;
  int rows = 0;
  for (const auto& [id, aps] : per) {
    if (rows++ == kMaxCategoryRows) {
      o << "  ... " << per.size() - kMaxCategoryRows << " more categories\n";
      break;
    }
    std::string name;
    if (auto it = e.bbox().category_names().find(id); it != e.bbox().category_names().end())
      name = it->second;
    else if (auto it2 = e.segm().category_names().find(id); it2 != e.segm().category_names().end())
      name = it2->second;
    const std::string label = "AP " + (name.empty() ? "category " + std::to_string(id) : name);
    const auto cell = [](const std::optional<double>& v) {
      return !v ? std::string("") : *v < 0 ? std::string("-") : format("%.3f", *v);
    };
    o << "  " << padRight(label, 46) << padLeft(cell(aps.first), 7)
      << (has_segm ? padLeft(cell(aps.second), 8) : "") << "\n";
  }
  if (e.has_val_losses()) {
    o << "  validation loss " << loss(e.val_losses().total()) << "  " << lossParts(e.val_losses());
    if (last_progress_ && last_progress_->has_losses())
      o << "  (training loss " << loss(last_progress_->losses().total()) << " at step "
        << last_progress_->step() << ")";
    o << "\n";
  }
  std::string text = o.str();
  text.pop_back();  // printLine() adds the last newline
  return text;
}

std::string EventRenderer::summary(const std::string& status, double elapsed) const {
  std::ostringstream o;
  o << task_ << " " << (status == "ok" ? "finished" : status);
  if (elapsed > 0) o << " after " << duration(elapsed);
  if (last_progress_ && last_progress_->has_losses()) {
    o << ": step " << last_progress_->step();
    if (total_steps_ > 0) o << " of " << total_steps_;
    o << ", loss " << loss(last_progress_->losses().total());
  } else if (last_progress_) {
    o << ": " << last_progress_->step();
    if (total_steps_ > 0) o << " of " << total_steps_;
    o << " " << unit();
  }
  o << "\n";
  if (best_bbox_ || best_segm_) {
    // One evaluation (the evaluate task) has no "best".
    o << (evaluations_ > 1 || task_ == "train" ? "  best" : " ");
    if (best_bbox_)
      o << " bbox AP " << format("%.3f", best_bbox_->first) << " (step " << best_bbox_->second
        << ")";
    if (best_bbox_ && best_segm_) o << ",";
    if (best_segm_)
      o << " segm AP " << format("%.3f", best_segm_->first) << " (step " << best_segm_->second
        << ")";
    o << "\n";
  }
  if (!last_checkpoint_.empty()) o << "  last checkpoint " << last_checkpoint_ << "\n";
  if (warnings_ > 0 || errors_ > 0)
    o << "  " << warnings_ << (warnings_ == 1 ? " warning, " : " warnings, ") << errors_
      << (errors_ == 1 ? " error\n" : " errors\n");
  return o.str();
}

std::string EventRenderer::finish(int exit_code) {
  std::string out;
  if (options_.tty && !bar_.empty()) out += "\n";
  bar_.clear();
  if (done_) return out;
  // Tasks without events (validate, dataset_convert) end quietly: their errors, if any, are
  // already on stderr. An engine killed before its first event still gets a line.
  if (start_time_ == 0 && exit_code <= 128) return out;
  const std::string status = exit_code == 0 ? "ok"
                             : exit_code > 128
                                 ? "killed by signal " + std::to_string(exit_code - 128)
                                 : "failed with exit code " + std::to_string(exit_code);
  return out + summary(status, 0);
}

}  // namespace mrcnn::app
