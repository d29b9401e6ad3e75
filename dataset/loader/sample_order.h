// The order in which the loader visits a dataset, and its flip decisions: functions of
// (seed, epoch, index) only, computed with explicitly defined generators so that a run gives
// the same stream on every machine, with any number of threads, and after a resume. (The
// std:: distributions and std::shuffle are implementation-defined and differ between
// standard libraries; they are not used here.)
#pragma once

#include <cstdint>
#include <vector>

namespace mrcnn::dataset {

// SplitMix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
uint64_t mix64(uint64_t x);

// xoshiro256** 1.0 (Blackman, Vigna 2018), seeded with SplitMix64 as its authors recommend.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  // Uniform in [0, bound) for bound >= 1: Lemire's multiply-shift on the high 32 bits of
  // next(), with rejection of the biased low products (so exactly uniform).
  uint32_t below(uint32_t bound);

 private:
  uint64_t s_[4];
};

// The key of one epoch's randomness: differs for every (seed, epoch) pair in practice.
uint64_t epochKey(uint64_t seed, uint64_t epoch);

// The training order of `count` samples in `epoch`:
//  - shuffle_buffer == 0 or >= count: a uniform permutation (Fisher-Yates, from the end);
//  - otherwise tf.data's shuffle-buffer semantics, as TAO's pipeline: a window of
//    shuffle_buffer samples filled in file order; each step outputs a uniformly chosen window
//    slot and refills it with the next sample in file order (the window shrinks at the end).
std::vector<uint32_t> trainingOrder(uint64_t seed, uint64_t epoch, uint32_t count,
                                    uint32_t shuffle_buffer);

// Whether sample `sample_index` (its index in the source, not its position in the order) is
// flipped horizontally in `epoch`: a fair coin from (seed, epoch, sample_index).
bool flipDecision(uint64_t seed, uint64_t epoch, uint32_t sample_index);

}  // namespace mrcnn::dataset
