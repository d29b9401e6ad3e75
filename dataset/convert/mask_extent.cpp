#include "dataset/convert/mask_extent.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace mrcnn::dataset {

std::optional<ContourExtent> contourExtent(const Rle& mask) {
  const uint64_t h = mask.h;
  const uint64_t w = mask.w;
  const uint64_t total = h * w;
  uint64_t sum = 0;
  for (uint32_t c : mask.counts)
    sum += c;
  if (sum != total) {
    throw std::invalid_argument("mask runs add up to " + std::to_string(sum) + " pixels, not " +
                                std::to_string(h) + "x" + std::to_string(w));
  }
  if (h < 2 || w < 2) return std::nullopt;

  // One walk over the foreground runs: the foreground's bounding rows and columns, and per
  // column how far the foreground reaches down from row 0 and up from row h - 1 (for the
  // rows that are entirely foreground).
  uint64_t c0 = w, c1 = 0, r0 = h, r1 = 0;
  uint64_t foreground = 0;
  std::vector<uint32_t> top(w, 0), bottom(w, 0);
  uint64_t pos = 0;
  for (size_t i = 0; i < mask.counts.size(); ++i) {
    const uint64_t s = pos;
    const uint64_t e = pos + mask.counts[i];
    pos = e;
    if (i % 2 == 0 || s == e) continue;
    foreground += e - s;
    const uint64_t cs = s / h, ce = (e - 1) / h;
    c0 = std::min(c0, cs);
    c1 = std::max(c1, ce);
    if (ce > cs) {  // spans a column boundary: covers row 0 and row h-1 somewhere
      r0 = 0;
      r1 = h - 1;
    } else {
      r0 = std::min(r0, s % h);
      r1 = std::max(r1, (e - 1) % h);
    }
    for (uint64_t c = cs; c <= ce; ++c) {
      const uint64_t begin = c * h, end = begin + h;
      if (s <= begin) top[c] = static_cast<uint32_t>(std::min(e, end) - begin);
      if (e >= end) bottom[c] = static_cast<uint32_t>(end - std::max(s, begin));
    }
  }
  if (foreground == 0 || foreground == total) return std::nullopt;

  // Whole foreground columns at the left or right border, whole rows at the top or bottom.
  uint64_t left = 0, right = 0;
  while (left < w && top[left] == h)
    ++left;
  while (right < w && top[w - 1 - right] == h)
    ++right;
  uint64_t rows_top = h, rows_bottom = h;
  for (uint64_t c = 0; c < w; ++c) {
    rows_top = std::min<uint64_t>(rows_top, top[c]);
    rows_bottom = std::min<uint64_t>(rows_bottom, bottom[c]);
  }

  // Towards the border at `low`: half a pixel beyond the first foreground pixel when it is
  // not on the border; on the border, the pixel itself, unless whole lines of foreground
  // line it, which put the first transition half a pixel inside them.
  const auto lowEnd = [](uint64_t first, uint64_t full_lines) {
    if (first > 0) return static_cast<double>(first) - 0.5;
    return full_lines == 0 ? 0.0 : static_cast<double>(full_lines) - 0.5;
  };
  const auto highEnd = [](uint64_t last, uint64_t size, uint64_t full_lines) {
    if (last < size - 1) return static_cast<double>(last) + 0.5;
    return full_lines == 0 ? static_cast<double>(size - 1)
                           : static_cast<double>(size - full_lines) - 0.5;
  };
  ContourExtent x;
  x.min_x = lowEnd(c0, left);
  x.max_x = highEnd(c1, w, right);
  x.min_y = lowEnd(r0, rows_top);
  x.max_y = highEnd(r1, h, rows_bottom);
  return x;
}

bool maskOutsideBox(const std::optional<ContourExtent>& extent, const std::array<double, 4>& box) {
  if (!extent) return false;
  const auto [x, y, bw, bh] = box;
  return x - 1 > extent->min_x || y - 1 > extent->min_y || x + bw + 1 < extent->max_x ||
         y + bh + 1 < extent->max_y;
}

}  // namespace mrcnn::dataset
