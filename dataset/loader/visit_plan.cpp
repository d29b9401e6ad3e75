#include "dataset/loader/visit_plan.h"

#include <algorithm>

namespace mrcnn::dataset {

VisitPlan::VisitPlan(uint64_t epoch_size, uint32_t batch_size, bool training,
                     uint32_t shard_count, uint32_t shard_index)
    : batch_(std::max<uint32_t>(batch_size, 1)),
      shards_(std::max<uint32_t>(shard_count, 1)),
      index_(shard_index) {
  global_batch_ = batch_ * shards_;
  if (shards_ == 1) {
    size_ = epoch_size;
  } else if (training) {
    slices_ = true;
    size_ = epoch_size / global_batch_ * batch_;
  } else {
    strided_ = true;
    size_ = epoch_size > index_ ? (epoch_size - index_ + shards_ - 1) / shards_ : 0;
  }
}

uint64_t VisitPlan::position(uint64_t visit) const {
  if (slices_) return visit / batch_ * global_batch_ + index_ * batch_ + visit % batch_;
  if (strided_) return visit * shards_ + index_;
  return visit;
}

uint64_t VisitPlan::firstVisitFrom(uint64_t position) const {
  // A resumed run's position ends a global batch; any other is rounded up to the next one.
  if (slices_) return (position + global_batch_ - 1) / global_batch_ * batch_;
  if (strided_) return position > index_ ? (position - index_ + shards_ - 1) / shards_ : 0;
  return position;
}

bool VisitPlan::endsSlice(uint64_t visit) const {
  return slices_ && visit % batch_ == batch_ - 1;
}

uint64_t VisitPlan::positionAfterSlice(uint64_t visit) const {
  return (visit / batch_ + 1) * global_batch_;
}

}  // namespace mrcnn::dataset
