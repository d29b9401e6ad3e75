#include "engine/events/task_report.h"

#include <exception>
#include <ostream>

#include "engine/exit_codes.h"
#include "io/write_error.h"

namespace mrcnn::engine {

TaskReport::TaskReport(train::EventWriter* events, std::ostream& out, std::ostream& err)
    : events_(events), out_(out), err_(err), started_(std::chrono::steady_clock::now()) {}

void TaskReport::write(events::Event event) {
  if (events_) events_->write(std::move(event));
}

void TaskReport::log(const std::string& text) {
  if (events_) {
    events_->write(train::logEvent(text));
  } else {
    out_ << text;
    if (text.empty() || text.back() != '\n') out_ << '\n';
  }
}

void TaskReport::warn(const std::string& code, const std::string& message, int64_t image_id) {
  if (events_) {
    events_->write(train::warningEvent(code, message, image_id));
  } else {
    err_ << "warning: " << message << '\n';
  }
}

int TaskReport::fail(const std::string& code, const std::string& message, int exit_code) {
  std::string text = message;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  out_.flush();
  err_ << "error: " << error_prefix_ << text << '\n';
  err_.flush();
  if (events_) writeFailureEvents(*events_, code, text, exit_code, elapsed(), err_);
  return exit_code;
}

int TaskReport::fail(const std::exception& e, const std::string& code, const std::string& context,
                     int exit_code) {
  if (isDiskFull(e)) return fail("disk_full", e.what(), kExitBadData);
  return fail(code, context + e.what(), exit_code);
}

double TaskReport::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

bool isDiskFull(const std::exception& e) {
  return dynamic_cast<const io::DiskFullError*>(&e) != nullptr;
}

int exitCodeFor(const std::exception& e, int otherwise) {
  return isDiskFull(e) ? kExitBadData : otherwise;
}

void writeFailureEvents(train::EventWriter& events, const std::string& code,
                        const std::string& message, int exit_code, double elapsed_seconds,
                        std::ostream& err) {
  std::string file_error;
  for (events::Event event : {train::errorEvent(code, message, static_cast<uint32_t>(exit_code)),
                              train::doneEvent("failed", message, elapsed_seconds)}) {
    try {
      events.write(std::move(event));
    } catch (const std::exception& e) {
      if (file_error.empty()) file_error = e.what();
    }
  }
  // A full disk: stdout had both events, the run directory's files could not take them.
  if (!file_error.empty()) err << "error: " << file_error << '\n';
}

train::CocoSummary cocoSummary(const eval::EvalResult& result, const dataset::CocoDataset& gt) {
  train::CocoSummary s;
  s.stats.assign(result.stats.begin(), result.stats.end());
  for (size_t k = 0; k < result.category_ids.size(); ++k) {
    s.per_category_ap[result.category_ids[k]] = result.per_category_ap[k];
  }
  for (const auto& c : gt.categories())
    s.category_names[c.id] = c.name;
  return s;
}

}  // namespace mrcnn::engine
