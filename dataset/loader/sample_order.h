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

// Class-balanced repeats (LVIS's rule, as detectron2's RepeatFactorTrainingSampler): with f_c
// the share of images holding category c, c's factor is max(1, sqrt(threshold / f_c)) and an
// image's the largest of its categories' (1 for an image without any). `labels`: each
// image's categories (repeats allowed).
std::vector<double> repeatFactors(const std::vector<std::vector<uint32_t>>& labels, double threshold);
// One category's factor: max(1, sqrt(threshold / share)), share = the images holding it.
double categoryRepeatFactor(double share, double threshold);

// An epoch with repeats: image i is visited floor(r_i) times, plus once more with probability
// frac(r_i) (systematic sampling over the images in a shuffled order: a uniform start, then a
// visit wherever the cumulative fractions pass a whole step). Every epoch has the same length,
// sum(floor(r_i)) + ceil(sum(frac(r_i))): an epoch whose draw comes one short gives that visit
// to an image drawn uniformly, so an image's mean visits exceed r_i by less than 1 / the
// number of images. Then the visits are shuffled. A function of (seed, epoch) like
// trainingOrder.
uint32_t repeatedEpochSize(const std::vector<double>& factors);
std::vector<uint32_t> repeatedOrder(uint64_t seed, uint64_t epoch, const std::vector<double>& factors);

}  // namespace mrcnn::dataset
