// The loader's ordered pipeline: worker threads claim stream indices and run each sample
// through processSample (process_sample.h), within a window of the assembler; the assembler
// takes the results back in stream order, fills batches, ends epochs and reports an epoch
// with no batch; next() hands the batches out. With no workers the same steps run in next().
#include "dataset/loader/loader.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <utility>

#include "dataset/loader/process_sample.h"
#include "dataset/loader/sample_order.h"
#include "dataset/loader/visit_plan.h"

namespace mrcnn::dataset {

std::string_view loaderWarningName(LoaderWarningCode code) {
  switch (code) {
    case LoaderWarningCode::kMissingImage:
      return "missing_image";
    case LoaderWarningCode::kUnreadableImage:
      return "unreadable_image";
    case LoaderWarningCode::kCorruptImage:
      return "corrupt_image";
    case LoaderWarningCode::kSizeMismatch:
      return "image_size_mismatch";
    case LoaderWarningCode::kBadMask:
      return "bad_mask";
    case LoaderWarningCode::kUnknownCategory:
      return "unknown_category";
  }
  return "unknown";
}

namespace {

constexpr size_t kMaxKeptWarnings = 10000;

bool skipsImage(LoaderWarningCode code) {
  return code == LoaderWarningCode::kMissingImage || code == LoaderWarningCode::kUnreadableImage ||
         code == LoaderWarningCode::kCorruptImage || code == LoaderWarningCode::kSizeMismatch;
}

// What the consumer receives, in stream order.
struct Outcome {
  enum class Kind : uint8_t { kBatch, kEnd, kError };
  Kind kind = Kind::kBatch;
  Batch batch;                          // kBatch
  std::vector<LoaderWarning> warnings;  // kEnd, kError: those met after the last batch
  std::exception_ptr error;             // kError

  static Outcome end(std::vector<LoaderWarning> warnings = {}) {
    Outcome o;
    o.kind = Kind::kEnd;
    o.warnings = std::move(warnings);
    return o;
  }
  static Outcome failure(std::exception_ptr error) {
    Outcome o;
    o.kind = Kind::kError;
    o.error = std::move(error);
    return o;
  }
};

void validate(const LoaderOptions& o, size_t source_size) {
  auto fail = [](const std::string& message) { throw LoaderError("data loader: " + message); };
  if (source_size == 0) fail("the dataset has no images");
  if (source_size > std::numeric_limits<uint32_t>::max()) fail("more than 2^32 images");
  if (o.batch_size == 0) fail("batch_size must be at least 1");
  if (o.resize_mode == ResizeMode::kFixed && (o.image_height <= 0 || o.image_width <= 0))
    fail("image_size must be positive, got (" + std::to_string(o.image_height) + ", " +
         std::to_string(o.image_width) + ")");
  if (o.resize_mode == ResizeMode::kShorterSide) {
    if (o.min_size == 0 || o.max_size == 0) fail("min_size and max_size must be positive");
    if (o.size_divisibility == 0) fail("size_divisibility must be at least 1");
  }
  if (o.max_level > 12) fail("max_level " + std::to_string(o.max_level) + " is out of range");
  if (o.n_workers > 256) fail("n_workers " + std::to_string(o.n_workers) + " is too many");
  if (o.shard_count == 0 || o.shard_index >= o.shard_count)
    fail("shard " + std::to_string(o.shard_index) + " of " + std::to_string(o.shard_count) +
         " does not exist");
  if (o.training && o.shard_count > 1 &&
      source_size < static_cast<uint64_t>(o.batch_size) * o.shard_count)
    fail("the dataset has " + std::to_string(source_size) +
         " images, fewer than one global batch (" + std::to_string(o.batch_size) + " x " +
         std::to_string(o.shard_count) + " ranks)");
}

}  // namespace

class Loader::Pipeline {
 public:
  Pipeline(std::shared_ptr<const SampleSource> source, LoaderOptions options)
      : source_(std::move(source)), options_(options) {
    if (!source_) throw LoaderError("data loader: no sample source");
    validate(options_, source_->size());
    if (options_.load_masks && !source_->hasMasks())
      throw LoaderError(
          "data loader: the dataset has no instance masks (shards converted with "
          "--include-mask false); convert it with masks, or train without the mask head");
    const auto count = static_cast<uint32_t>(source_->size());
    repeats_ = options_.training && !options_.repeat_factors.empty();
    if (repeats_ && options_.repeat_factors.size() != count)
      throw LoaderError("data loader: " + std::to_string(options_.repeat_factors.size()) +
                        " repeat factors for " + std::to_string(count) + " images");
    epoch_size_ = repeats_ ? repeatedEpochSize(options_.repeat_factors)
                  : options_.training || options_.eval_samples == 0
                      ? count
                      : std::min(count, options_.eval_samples);
    repeat_ = options_.training && options_.repeat;
    plan_ = VisitPlan(epoch_size_, options_.batch_size, options_.training, options_.shard_count,
                      options_.shard_index);
    resize_.mode = options_.resize_mode;
    resize_.canvas_height = options_.image_height;
    resize_.canvas_width = options_.image_width;
    resize_.min_size = static_cast<int>(options_.min_size);
    resize_.max_size = static_cast<int>(options_.max_size);
    prefetch_ = std::max<uint32_t>(options_.prefetch_buffer_size, 1);
    window_ = std::max<uint64_t>({uint64_t{2} * options_.n_workers, options_.batch_size, 2});
  }

  ~Pipeline() { stop(); }

  void start(uint64_t epoch, uint64_t position) {
    if (position >= epoch_size_ && repeat_) {
      epoch += position / epoch_size_;
      position %= epoch_size_;
    }
    consumer_epoch_ = epoch;
    consumer_position_ = std::min<uint64_t>(position, epoch_size_);
    uint64_t visit = plan_.firstVisitFrom(consumer_position_);
    if (visit >= plan_.size() && repeat_ && plan_.size() > 0) {
      ++epoch;
      visit = 0;
    }
    start_epoch_ = epoch;
    start_position_ = std::min<uint64_t>(visit, plan_.size());
    stream_end_ = repeat_ ? std::numeric_limits<uint64_t>::max() : plan_.size() - start_position_;
    stopping_ = false;
    next_claim_ = 0;
    assembled_ = 0;
    sync_next_ = 0;
    ring_.assign(window_, std::nullopt);
    ready_.clear();
    assembly_ = {};
    assembly_.epoch_from_start = start_position_ == 0;
    finished_ = false;
    failed_ = nullptr;
    if (stream_end_ == 0) {  // a single pass resumed at its end
      ready_.push_back(Outcome::end());
      return;
    }
    if (options_.n_workers == 0) return;
    for (uint32_t i = 0; i < options_.n_workers; ++i)
      workers_.emplace_back([this] { workerLoop(); });
    assembler_ = std::thread([this] { assemblerLoop(); });
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    result_cv_.notify_all();
    space_cv_.notify_all();
    for (std::thread& t : workers_)
      t.join();
    workers_.clear();
    if (assembler_.joinable()) assembler_.join();
  }

  std::optional<Batch> next() {
    if (failed_) std::rethrow_exception(failed_);
    if (finished_) return std::nullopt;
    const auto t0 = std::chrono::steady_clock::now();
    Outcome outcome;
    if (options_.n_workers == 0) {
      while (ready_.empty())
        runSynchronously();
      outcome = std::move(ready_.front());
      ready_.pop_front();
    } else {
      {
        std::unique_lock lock(mutex_);
        batch_cv_.wait(lock, [&] { return !ready_.empty(); });
        outcome = std::move(ready_.front());
        ready_.pop_front();
      }
      space_cv_.notify_one();
    }
    stats_.last_wait_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats_.wait_seconds += stats_.last_wait_seconds;
    switch (outcome.kind) {
      case Outcome::Kind::kBatch: {
        Batch& batch = outcome.batch;
        record(batch.warnings);
        consumer_epoch_ = batch.epoch;
        consumer_position_ = batch.position;
        ++stats_.batches;
        stats_.images += batch.size();
        return std::move(batch);
      }
      case Outcome::Kind::kEnd:
        record(outcome.warnings);
        finished_ = true;
        consumer_position_ = epoch_size_;
        return std::nullopt;
      case Outcome::Kind::kError:
        record(outcome.warnings);
        failed_ = outcome.error;
        std::rethrow_exception(failed_);
    }
    return std::nullopt;
  }

  uint64_t epoch() const { return consumer_epoch_; }
  uint64_t position() const { return consumer_position_; }
  size_t epochSize() const { return epoch_size_; }
  const LoaderOptions& options() const { return options_; }
  LoaderStats stats() const { return stats_; }
  std::vector<LoaderWarning> warnings() const { return kept_warnings_; }
  std::vector<LoaderWarning> takeWarnings() { return std::exchange(new_warnings_, {}); }

 private:
  // State of the batch being filled; owned by the assembler thread (or next() without workers).
  struct Assembly {
    std::vector<SampleResult> pending;
    std::vector<LoaderWarning> warnings;
    uint64_t batches = 0;  // emitted in the current epoch
    uint64_t skipped = 0;  // samples skipped in the current epoch
    bool epoch_from_start = true;
    std::string first_problem;
  };

  // Stream index k (0 = the start) to (epoch, visit in the epoch): visit_plan.h.
  std::pair<uint64_t, uint64_t> locate(uint64_t k) const {
    const uint64_t visits = plan_.size();
    const uint64_t first = visits - start_position_;
    if (k < first) return {start_epoch_, start_position_ + k};
    k -= first;
    return {start_epoch_ + 1 + k / visits, k % visits};
  }

  uint32_t sampleAt(uint64_t epoch, uint64_t position) {
    if (!options_.training) return static_cast<uint32_t>(position);
    std::shared_ptr<const std::vector<uint32_t>> order;
    {
      std::lock_guard lock(order_mutex_);
      auto it = orders_.find(epoch);
      if (it == orders_.end()) {
        it = orders_
                 .emplace(epoch,
                          std::make_shared<const std::vector<uint32_t>>(
                              repeats_ ? repeatedOrder(options_.seed, epoch, options_.repeat_factors)
                                       : trainingOrder(options_.seed, epoch, epoch_size_,
                                                       options_.shuffle_buffer_size)))
                 .first;
        // Workers are at most a window apart: two epochs are ever in use.
        while (orders_.begin()->first + 2 < epoch)
          orders_.erase(orders_.begin());
      }
      order = it->second;
    }
    return (*order)[position];
  }

  SampleResult processIndex(uint64_t k) {
    try {
      const auto [epoch, visit] = locate(k);
      const uint64_t position = plan_.position(visit);
      return processSample(*source_, options_, resize_, epoch, position, sampleAt(epoch, position));
    } catch (...) {
      SampleResult result;
      result.fatal = std::current_exception();
      return result;
    }
  }

  // Takes sample k's result in stream order; appends what it completes to `out`. Returns
  // true when the stream is over (its end or an error).
  bool feed(uint64_t k, SampleResult&& result, std::vector<Outcome>& out) {
    if (result.fatal) {
      out.push_back(Outcome::failure(result.fatal));
      return true;
    }
    const auto [epoch, visit] = locate(k);
    const uint64_t position = plan_.position(visit);
    Assembly& a = assembly_;
    for (LoaderWarning& w : result.warnings) {
      if (skipsImage(w.code) && a.first_problem.empty())
        a.first_problem = std::string(loaderWarningName(w.code)) + ": " + w.message;
      a.warnings.push_back(std::move(w));
    }
    result.warnings.clear();
    if (result.ok) {
      a.pending.push_back(std::move(result));
    } else {
      ++a.skipped;
    }
    const bool epoch_end = visit + 1 == plan_.size();
    const bool keep_short = !(options_.training && options_.drop_last);
    const bool full = plan_.slices() ? plan_.endsSlice(visit)
                                     : a.pending.size() == options_.batch_size ||
                                           (epoch_end && keep_short && !a.pending.empty());
    if (full) {
      Outcome o;
      if (!a.pending.empty()) ++a.batches;
      o.batch = collate(a.pending, epoch,
                        plan_.slices() ? plan_.positionAfterSlice(visit) : position + 1);
      o.batch.warnings = std::move(a.warnings);
      a.warnings.clear();
      a.pending.clear();
      out.push_back(std::move(o));
    }
    if (!epoch_end) return false;
    if (a.batches == 0 && a.epoch_from_start) {
      std::string message = "data loader: epoch " + std::to_string(epoch) +
                            " yields no batch: " + std::to_string(a.skipped) + " of " +
                            std::to_string(epoch_size_) + " images could not be used";
      if (a.skipped < epoch_size_)
        message +=
            ", fewer than the batch size " + std::to_string(options_.batch_size) + " are left";
      if (!a.first_problem.empty()) message += " (first: " + a.first_problem + ")";
      message += "; check the image folder or run dataset_convert for a report";
      Outcome failure = Outcome::failure(std::make_exception_ptr(LoaderError(message)));
      failure.warnings = std::move(a.warnings);
      out.push_back(std::move(failure));
      return true;
    }
    std::vector<LoaderWarning> left = std::move(a.warnings);
    a = {};
    a.epoch_from_start = true;
    if (!repeat_) {
      out.push_back(Outcome::end(std::move(left)));
      return true;
    }
    a.warnings = std::move(left);  // reported with the next epoch's first batch
    return false;
  }

  Batch collate(std::vector<SampleResult>& samples, uint64_t epoch, uint64_t position) const {
    Batch batch;
    batch.epoch = epoch;
    batch.position = position;
    if (options_.resize_mode == ResizeMode::kFixed) {
      const int multiple = 1 << options_.max_level;
      batch.height = roundUp(options_.image_height, multiple);
      batch.width = roundUp(options_.image_width, multiple);
    } else {
      for (const SampleResult& s : samples) {
        batch.height = std::max(batch.height, s.meta.height);
        batch.width = std::max(batch.width, s.meta.width);
      }
      batch.height = roundUp(batch.height, static_cast<int>(options_.size_divisibility));
      batch.width = roundUp(batch.width, static_cast<int>(options_.size_divisibility));
    }
    const auto bh = static_cast<size_t>(batch.height);
    const auto bw = static_cast<size_t>(batch.width);
    batch.images.assign(samples.size() * 3 * bh * bw, 0.0f);
    for (size_t i = 0; i < samples.size(); ++i) {
      SampleResult& s = samples[i];
      const auto h = static_cast<size_t>(s.meta.height);
      const auto w = static_cast<size_t>(s.meta.width);
      for (size_t c = 0; c < 3; ++c)
        for (size_t y = 0; y < h; ++y)
          std::copy_n(s.pixels.data() + (c * h + y) * w, w,
                      batch.images.data() + ((i * 3 + c) * bh + y) * bw);
      s.pixels = {};
      batch.meta.push_back(s.meta);
      batch.targets.push_back(std::move(s.targets));
    }
    return batch;
  }

  void workerLoop() {
    for (;;) {
      uint64_t k = 0;
      {
        std::unique_lock lock(mutex_);
        work_cv_.wait(lock, [&] {
          return stopping_ || (next_claim_ < stream_end_ && next_claim_ < assembled_ + window_);
        });
        if (stopping_) return;
        k = next_claim_++;
      }
      SampleResult result = processIndex(k);
      {
        std::lock_guard lock(mutex_);
        ring_[k % window_] = std::move(result);
      }
      result_cv_.notify_all();
    }
  }

  void assemblerLoop() {
    std::vector<Outcome> out;
    for (uint64_t k = 0; k < stream_end_; ++k) {
      SampleResult result;
      {
        std::unique_lock lock(mutex_);
        result_cv_.wait(lock, [&] { return stopping_ || ring_[k % window_].has_value(); });
        if (stopping_) return;
        result = std::move(*ring_[k % window_]);
        ring_[k % window_].reset();
        ++assembled_;
      }
      work_cv_.notify_all();
      bool done = false;
      try {
        done = feed(k, std::move(result), out);
      } catch (...) {
        out.push_back(Outcome::failure(std::current_exception()));
        done = true;
      }
      for (Outcome& o : out) {
        {
          std::unique_lock lock(mutex_);
          space_cv_.wait(lock, [&] { return stopping_ || ready_.size() < prefetch_; });
          if (stopping_) return;
          ready_.push_back(std::move(o));
        }
        batch_cv_.notify_one();
      }
      out.clear();
      if (done) return;
    }
  }

  // Without workers: processes samples in the caller's thread until an outcome is ready.
  void runSynchronously() {
    std::vector<Outcome> out;
    const uint64_t k = sync_next_++;
    bool done = false;
    try {
      done = feed(k, processIndex(k), out);
    } catch (...) {
      out.push_back(Outcome::failure(std::current_exception()));
      done = true;
    }
    for (Outcome& o : out)
      ready_.push_back(std::move(o));
    (void)done;  // an end or an error is in `out`; next() stops calling after it
  }

  void record(std::vector<LoaderWarning>& warnings) {
    for (LoaderWarning& w : warnings) {
      ++stats_.warnings;
      if (skipsImage(w.code)) ++stats_.skipped_images;
      if (kept_warnings_.size() < kMaxKeptWarnings) kept_warnings_.push_back(w);
      if (new_warnings_.size() < kMaxKeptWarnings) new_warnings_.push_back(std::move(w));
    }
  }

  const std::shared_ptr<const SampleSource> source_;
  const LoaderOptions options_;
  uint32_t epoch_size_ = 0;
  bool repeats_ = false;  // training with repeat factors
  VisitPlan plan_;
  bool repeat_ = false;
  ResizeSpec resize_;
  size_t prefetch_ = 1;
  uint64_t window_ = 2;

  // The stream: index k of the samples visited since (start_epoch_, start_position_), the
  // latter a visit index of plan_.
  uint64_t start_epoch_ = 0;
  uint64_t start_position_ = 0;
  uint64_t stream_end_ = 0;

  std::mutex order_mutex_;
  std::map<uint64_t, std::shared_ptr<const std::vector<uint32_t>>> orders_;

  // Shared by workers, the assembler and the consumer, under mutex_.
  std::mutex mutex_;
  std::condition_variable work_cv_;    // workers: room in the window, or stop
  std::condition_variable result_cv_;  // assembler: the next sample's result is in
  std::condition_variable space_cv_;   // assembler: room in the prefetch queue
  std::condition_variable batch_cv_;   // consumer: an outcome is ready
  bool stopping_ = false;
  uint64_t next_claim_ = 0;                        // the next stream index a worker takes
  uint64_t assembled_ = 0;                         // stream indices taken by the assembler
  std::vector<std::optional<SampleResult>> ring_;  // results by k % window_
  std::deque<Outcome> ready_;
  std::vector<std::thread> workers_;
  std::thread assembler_;

  Assembly assembly_;
  uint64_t sync_next_ = 0;

  // The consumer's side.
  bool finished_ = false;
  std::exception_ptr failed_;
  uint64_t consumer_epoch_ = 0;
  uint64_t consumer_position_ = 0;
  LoaderStats stats_;
  std::vector<LoaderWarning> kept_warnings_;
  std::vector<LoaderWarning> new_warnings_;
};

Loader::Loader(std::shared_ptr<const SampleSource> source, LoaderOptions options, uint64_t epoch,
               uint64_t position)
    : pipeline_(std::make_unique<Pipeline>(std::move(source), options)) {
  pipeline_->start(epoch, position);
}

Loader::~Loader() = default;

std::optional<Batch> Loader::next() {
  return pipeline_->next();
}

void Loader::reset(uint64_t epoch, uint64_t position) {
  pipeline_->stop();
  pipeline_->start(epoch, position);
}

uint64_t Loader::epoch() const {
  return pipeline_->epoch();
}
uint64_t Loader::position() const {
  return pipeline_->position();
}
size_t Loader::epochSize() const {
  return pipeline_->epochSize();
}
const LoaderOptions& Loader::options() const {
  return pipeline_->options();
}
LoaderStats Loader::stats() const {
  return pipeline_->stats();
}
std::vector<LoaderWarning> Loader::warnings() const {
  return pipeline_->warnings();
}
std::vector<LoaderWarning> Loader::takeWarnings() {
  return pipeline_->takeWarnings();
}

}  // namespace mrcnn::dataset
