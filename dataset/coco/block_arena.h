// Append-only storage for runs of values (one polygon's coordinates, one RLE's counts, one
// string) in large blocks. A finished run is contiguous and never moves, so tables keep spans
// into it; growing never copies what is stored (a std::vector would, and for a moment hold
// both copies: twice the memory at the peak), and arenas filled by different threads are
// joined by handing over their blocks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace mrcnn::dataset::coco_detail {

template <class T>
class BlockArena {
 public:
  // 8 MiB blocks: few allocations, and at most one partly used block per arena.
  static constexpr size_t kBlockElements = (size_t{8} << 20) / sizeof(T);

  void push(T value) {
    if (used_ == capacity_) grow();
    block_[used_++] = value;
  }
  // The values pushed since the last finishRun(), as one stable span.
  std::span<const T> finishRun() {
    const std::span<const T> run(block_ + run_start_, used_ - run_start_);
    run_start_ = used_;
    return run;
  }
  // Moves every block into `into`; spans handed out stay valid. The arena is empty after.
  void moveBlocksTo(BlockArena& into) {
    for (auto& b : blocks_)
      into.adopted_.push_back(std::move(b));
    for (auto& b : adopted_)
      into.adopted_.push_back(std::move(b));
    blocks_.clear();
    adopted_.clear();
    block_ = nullptr;
    used_ = capacity_ = run_start_ = 0;
  }

 private:
  void grow() {
    // The run in progress moves to the new block whole, so that it stays contiguous.
    const size_t run = used_ - run_start_;
    // Not huge pages (madvise): measured, the kernel's compaction for them cost more system
    // time than the 4 KiB page faults they save.
    const size_t capacity = std::max(kBlockElements, 2 * run + 16);
    auto block = std::make_unique_for_overwrite<T[]>(capacity);  // pages untouched until used
    std::copy(block_ + run_start_, block_ + used_, block.get());
    blocks_.push_back(std::move(block));
    block_ = blocks_.back().get();
    capacity_ = capacity;
    used_ = run;
    run_start_ = 0;
  }

  std::vector<std::unique_ptr<T[]>> blocks_;
  std::vector<std::unique_ptr<T[]>> adopted_;  // from other arenas: owned, never written
  T* block_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  size_t run_start_ = 0;
};

}  // namespace mrcnn::dataset::coco_detail
