// Which positions of an epoch one loader visits, and where its batches end. One process
// visits every position; with data-parallel training each rank visits its share:
//  - training, `shard_count` ranks of `batch_size` each: the epoch is cut into global batches
//    of batch_size x shard_count consecutive positions (the tail that fills no global batch is
//    dropped); rank r takes the r-th slice of each. A rank's batch is exactly its slice, less
//    the samples that cannot be read (never filled from elsewhere: that would need the other
//    ranks' files), so a global batch is the same samples whatever the number of ranks.
//  - evaluation: rank r takes positions r, r + shard_count, r + 2 shard_count, ... of the
//    images evaluated; results are gathered afterwards, so the split is free.
#pragma once

#include <cstdint>

namespace mrcnn::dataset {

class VisitPlan {
 public:
  VisitPlan() = default;
  VisitPlan(uint64_t epoch_size, uint32_t batch_size, bool training, uint32_t shard_count,
            uint32_t shard_index);

  uint64_t size() const { return size_; }                  // visits per epoch
  uint64_t position(uint64_t visit) const;                 // the epoch position of a visit
  uint64_t firstVisitFrom(uint64_t position) const;        // where a stream at `position` goes on
  bool slices() const { return slices_; }                  // batches are fixed global slices
  bool endsSlice(uint64_t visit) const;                    // the last visit of its slice
  uint64_t positionAfterSlice(uint64_t visit) const;       // the global batch's end position
  uint64_t globalBatch() const { return global_batch_; }  // batch_size x shard_count

 private:
  uint64_t size_ = 0;
  uint64_t batch_ = 1;
  uint64_t global_batch_ = 1;
  uint64_t shards_ = 1;
  uint64_t index_ = 0;
  bool slices_ = false;
  bool strided_ = false;
};

}  // namespace mrcnn::dataset
