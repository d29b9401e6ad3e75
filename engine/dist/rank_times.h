// Where each rank's steps go in a data-parallel job: computing, waiting for data, and in
// collectives (the transfer and the wait for slower ranks). In lockstep every step waits for
// the slowest rank, so a straggler (a slower core or machine, a busy neighbour) slows all;
// this names it. Host times: meaningful on Gloo, not on NCCL (whose waits only order streams).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mrcnn::dist {

class ProcessGroup;

class RankTimes {
 public:
  explicit RankTimes(ProcessGroup& group) : group_(group) {}

  void stepStarted();
  // The step's wall time since stepStarted, less `data_wait_seconds` and its collectives'
  // time, counts as compute.
  void stepEnded(double data_wait_seconds = 0);

  // Every rank's totals gathered (a collective: every rank calls it). On rank 0 the line
  // "rank 0 C + D + K; rank 1 ..." in ms a step, with the slowest rank named when it is more
  // than 5% behind the fastest; "" on the other ranks, without steps, or on NCCL.
  std::string gatherReport();

 private:
  ProcessGroup& group_;
  std::chrono::steady_clock::time_point started_;
  double collectives_at_start_ = 0;
  double totals_[3] = {0, 0, 0};  // seconds: compute, data, collectives
  uint64_t steps_ = 0;
};

}  // namespace mrcnn::dist
