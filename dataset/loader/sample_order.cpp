#include "dataset/loader/sample_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace mrcnn::dataset {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
// Domain separators, so that the order and the flips of one epoch are independent streams.
constexpr uint64_t kOrderDomain = 0x6F72646572000001ull;
constexpr uint64_t kFlipDomain = 0x666C697000000002ull;
constexpr uint64_t kRepeatDomain = 0x7265706561740003ull;

// The fractions' sum, and the whole number of extra visits an epoch has (its ceiling).
std::pair<double, uint64_t> extraVisits(const std::vector<double>& factors) {
  double fractions = 0;
  for (const double r : factors) fractions += r - std::floor(r);
  return {fractions, static_cast<uint64_t>(std::ceil(fractions))};
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& s : s_) {
    state += kGolden;
    s = mix64(state);
  }
}

uint64_t Xoshiro256::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint32_t Xoshiro256::below(uint32_t bound) {
  uint64_t product = (next() >> 32) * bound;
  auto low = static_cast<uint32_t>(product);
  if (low < bound) {
    const uint32_t threshold = (0u - bound) % bound;
    while (low < threshold) {
      product = (next() >> 32) * bound;
      low = static_cast<uint32_t>(product);
    }
  }
  return static_cast<uint32_t>(product >> 32);
}

uint64_t epochKey(uint64_t seed, uint64_t epoch) {
  return mix64(mix64(seed) + kGolden * (epoch + 1));
}

std::vector<uint32_t> trainingOrder(uint64_t seed, uint64_t epoch, uint32_t count,
                                    uint32_t shuffle_buffer) {
  Xoshiro256 rng(epochKey(seed, epoch) ^ kOrderDomain);
  std::vector<uint32_t> order(count);
  if (shuffle_buffer == 0 || shuffle_buffer >= count) {
    std::iota(order.begin(), order.end(), 0u);
    for (uint32_t i = count; i > 1; --i)
      std::swap(order[i - 1], order[rng.below(i)]);
    return order;
  }
  std::vector<uint32_t> window(shuffle_buffer);
  std::iota(window.begin(), window.end(), 0u);
  uint32_t next_in = shuffle_buffer;
  for (uint32_t& out : order) {
    const uint32_t slot = rng.below(static_cast<uint32_t>(window.size()));
    out = window[slot];
    if (next_in < count) {
      window[slot] = next_in++;
    } else {
      window[slot] = window.back();
      window.pop_back();
    }
  }
  return order;
}

bool flipDecision(uint64_t seed, uint64_t epoch, uint32_t sample_index) {
  return (mix64(epochKey(seed, epoch) ^ kFlipDomain ^ mix64(sample_index)) >> 63) != 0;
}

double categoryRepeatFactor(double share, double threshold) {
  return std::max(1.0, std::sqrt(threshold / share));
}

std::vector<double> repeatFactors(const std::vector<std::vector<uint32_t>>& labels, double threshold) {
  std::vector<uint64_t> images_with;
  for (const auto& image : labels) {
    std::vector<uint32_t> seen = image;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (const uint32_t c : seen) {
      if (c >= images_with.size()) images_with.resize(c + 1, 0);
      ++images_with[c];
    }
  }
  const auto n = static_cast<double>(labels.size());
  std::vector<double> out(labels.size(), 1.0);
  for (size_t i = 0; i < labels.size(); ++i) {
    for (const uint32_t c : labels[i]) {
      out[i] = std::max(out[i], categoryRepeatFactor(static_cast<double>(images_with[c]) / n, threshold));
    }
  }
  return out;
}

uint32_t repeatedEpochSize(const std::vector<double>& factors) {
  uint64_t whole = 0;
  for (const double r : factors) whole += static_cast<uint64_t>(std::floor(r));
  return static_cast<uint32_t>(whole + extraVisits(factors).second);
}

std::vector<uint32_t> repeatedOrder(uint64_t seed, uint64_t epoch, const std::vector<double>& factors) {
  Xoshiro256 rng(epochKey(seed, epoch) ^ kRepeatDomain);
  const auto count = static_cast<uint32_t>(factors.size());
  std::vector<uint32_t> visits;
  visits.reserve(repeatedEpochSize(factors));
  for (uint32_t i = 0; i < count; ++i)
    visits.insert(visits.end(), static_cast<size_t>(std::floor(factors[i])), i);
  // The extra visits: a uniform start in [0, 1), then every whole step of the images'
  // cumulative fractions, over the images in a random order (each image's chance exactly its
  // fraction); the epoch's last slot, when the draw leaves it, to a uniformly drawn image.
  const uint64_t extra = extraVisits(factors).second;
  if (extra > 0) {
    std::vector<uint32_t> shuffled(count);
    std::iota(shuffled.begin(), shuffled.end(), 0u);
    for (uint32_t i = count; i > 1; --i)
      std::swap(shuffled[i - 1], shuffled[rng.below(i)]);
    double next = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
    double cumulative = 0;
    uint64_t taken = 0;
    for (const uint32_t i : shuffled) {
      cumulative += factors[i] - std::floor(factors[i]);
      while (taken < extra && cumulative > next) {
        visits.push_back(i);
        next += 1;
        ++taken;
      }
    }
    for (; taken < extra; ++taken) visits.push_back(rng.below(count));
  }
  for (auto i = static_cast<uint32_t>(visits.size()); i > 1; --i)
    std::swap(visits[i - 1], visits[rng.below(i)]);
  return visits;
}

}  // namespace mrcnn::dataset
