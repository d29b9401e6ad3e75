// What the shapes generator's two halves share (not part of the dataset library's API): the
// platform-independent random streams, and the smallest visible area an instance keeps.
// dataset/shapes/shapes_scene.cpp paints the images, dataset/shapes/shapes_generator.cpp annotates them and
// writes the files.
#pragma once

#include <cstdint>
#include <numbers>
#include <random>
#include <string_view>

namespace mrcnn::dataset::shapes_detail {

inline constexpr int kMinVisibleArea = 10;  // smaller leftovers of occluded shapes are dropped

// Randomness. std::mt19937_64's sequence is fixed by the standard, the std distributions are
// not; these helpers are, so every platform draws the same numbers.

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int uniformInt(int lo, int hi) {  // [lo, hi]; the modulo bias is negligible at our ranges
    return lo + static_cast<int>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return uniform() < p; }
  // Approximately N(0, 1): the sum of four uniforms (Irwin-Hall), cheap and libm-free.
  double normal() {
    const uint64_t r = engine_();
    double sum = 0;
    for (int i = 0; i < 4; ++i)
      sum += static_cast<double>((r >> (16 * i)) & 0xffff) / 65536.0;
    return (sum - 2.0) * std::numbers::sqrt3;
  }

 private:
  std::mt19937_64 engine_;
};

// One independent stream per (seed, split, image, purpose): an image never depends on the
// images generated before it.
inline uint64_t streamSeed(uint32_t seed, std::string_view split, int index, uint64_t purpose) {
  uint64_t s = splitmix64(seed);
  s = splitmix64(s ^ fnv1a(split));
  s = splitmix64(s ^ static_cast<uint64_t>(index));
  return splitmix64(s ^ purpose);
}
inline constexpr uint64_t kRenderStream = 1;
inline constexpr uint64_t kEncodeStream = 2;

}  // namespace mrcnn::dataset::shapes_detail
