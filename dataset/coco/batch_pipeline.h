// Runs the parsing of batches: on the calling thread, or on worker threads while the calling
// thread goes on reading the file. Results are merged in file order, so the dataset and the
// first error reported are the same whatever the number of threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dataset/coco/dataset_builder.h"
#include "dataset/coco/json_stream.h"

namespace mrcnn::dataset::coco_detail {

class BatchPipeline final : public BatchSink {
 public:
  // `workers` = 0 parses on the calling thread.
  BatchPipeline(DatasetBuilder& builder, const std::string& file, size_t max_warnings,
                unsigned workers);
  ~BatchPipeline() override;  // stops and joins the workers

  PaddedBuffer acquire() override;
  void submit(RawBatch&& batch) override;
  // Waits for every batch and merges it; rethrows the first failure in file order. Then hands
  // the workers' arenas to the builder. After a failure was thrown, only stops the workers:
  // any later failure is further on in the file.
  void finish();

 private:
  struct Worker {
    explicit Worker(const std::string& file, size_t max_warnings) : parser(file, max_warnings) {}
    BatchParser parser;
    Arenas arenas;
    std::thread thread;
  };
  struct Outcome {
    std::unique_ptr<BatchResult> result;
    std::exception_ptr error;
  };

  void work(Worker& worker);
  // Merges finished batches that are next in order. Called with the lock held.
  void mergeReady(std::unique_lock<std::mutex>& lock);
  void stop();

  DatasetBuilder& builder_;
  BatchParser parser_;  // for workers = 0
  BatchResult result_;  // for workers = 0
  std::vector<std::unique_ptr<Worker>> workers_;
  size_t max_queued_;

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable result_ready_;
  std::deque<RawBatch> queue_;
  std::map<uint64_t, Outcome> done_;
  std::vector<PaddedBuffer> free_buffers_;
  std::vector<std::unique_ptr<BatchResult>> free_results_;
  uint64_t submitted_ = 0;
  uint64_t merged_ = 0;
  bool stopping_ = false;
  bool failed_ = false;  // a batch's failure was rethrown
};

}  // namespace mrcnn::dataset::coco_detail
