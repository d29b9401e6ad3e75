#include "dataset/coco/batch_pipeline.h"

namespace mrcnn::dataset::coco_detail {

BatchPipeline::BatchPipeline(DatasetBuilder& builder, const std::string& file, size_t max_warnings,
                             unsigned workers)
    : builder_(builder), parser_(file, max_warnings), max_queued_(2 * size_t{workers}) {
  for (unsigned i = 0; i < workers; ++i)
    workers_.push_back(std::make_unique<Worker>(file, max_warnings));
  for (auto& w : workers_)
    w->thread = std::thread([this, worker = w.get()] { work(*worker); });
}

BatchPipeline::~BatchPipeline() {
  stop();
}

void BatchPipeline::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

PaddedBuffer BatchPipeline::acquire() {
  const std::lock_guard lock(mutex_);
  if (free_buffers_.empty()) return {};
  PaddedBuffer buffer = std::move(free_buffers_.back());
  free_buffers_.pop_back();
  return buffer;
}

void BatchPipeline::submit(RawBatch&& batch) {
  if (workers_.empty()) {
    parser_.parse(batch, builder_.arenas(), result_);
    builder_.merge(result_);
    const std::lock_guard lock(mutex_);
    free_buffers_.push_back(std::move(batch.text));
    return;
  }
  std::unique_lock lock(mutex_);
  // Bounded: the reader must not run ahead of the parsers by more than a few batches, or
  // their text would pile up in memory.
  for (;;) {
    mergeReady(lock);
    if (queue_.size() < max_queued_) break;
    result_ready_.wait(lock);
  }
  queue_.push_back(std::move(batch));
  ++submitted_;
  lock.unlock();
  work_ready_.notify_one();
}

void BatchPipeline::work(Worker& worker) {
  for (;;) {
    RawBatch batch;
    Outcome outcome;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
      if (!free_results_.empty()) {
        outcome.result = std::move(free_results_.back());
        free_results_.pop_back();
      }
    }
    if (!outcome.result) outcome.result = std::make_unique<BatchResult>();
    try {
      worker.parser.parse(batch, worker.arenas, *outcome.result);
    } catch (...) {
      outcome.error = std::current_exception();
    }
    {
      const std::lock_guard lock(mutex_);
      done_.emplace(batch.sequence, std::move(outcome));
      free_buffers_.push_back(std::move(batch.text));
    }
    result_ready_.notify_one();
  }
}

void BatchPipeline::mergeReady(std::unique_lock<std::mutex>& lock) {
  for (auto it = done_.find(merged_); it != done_.end(); it = done_.find(merged_)) {
    Outcome outcome = std::move(it->second);
    done_.erase(it);
    ++merged_;
    if (outcome.error) {
      failed_ = true;
      std::rethrow_exception(outcome.error);
    }
    lock.unlock();  // merging is the reader's work; the workers go on meanwhile
    builder_.merge(*outcome.result);
    lock.lock();
    free_results_.push_back(std::move(outcome.result));
  }
}

void BatchPipeline::finish() {
  if (!workers_.empty() && !failed_) {
    std::unique_lock lock(mutex_);
    for (;;) {
      mergeReady(lock);
      if (merged_ == submitted_) break;
      result_ready_.wait(lock);
    }
  }
  stop();
  for (auto& w : workers_)
    w->arenas.moveTo(builder_.arenas());
}

}  // namespace mrcnn::dataset::coco_detail
