// Id -> index lookup for image and category ids. COCO's ids are dense enough for a direct
// table (train2017: 118k images with ids below 600k, 2.4 MB), which makes the 860k look-ups of
// a load a few milliseconds; sparse ids (hashes, timestamps) fall back to binary search.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace mrcnn::dataset::coco_detail {

struct IdEntry {
  int64_t id;
  uint32_t index;
};

class IdIndex {
 public:
  // `entries` sorted by id, ids unique.
  explicit IdIndex(std::vector<IdEntry> entries = {}) {
    if (entries.empty()) return;
    min_ = entries.front().id;
    const uint64_t span = static_cast<uint64_t>(entries.back().id) - static_cast<uint64_t>(min_);
    if (span <= 4 * uint64_t{entries.size()} + 1024) {
      dense_.assign(span + 1, kAbsent);
      for (const IdEntry& e : entries)
        dense_[static_cast<uint64_t>(e.id) - static_cast<uint64_t>(min_)] = e.index;
    } else {
      sorted_ = std::move(entries);
    }
  }

  std::optional<uint32_t> find(int64_t id) const {
    if (!dense_.empty()) {
      const uint64_t slot = static_cast<uint64_t>(id) - static_cast<uint64_t>(min_);
      if (id < min_ || slot >= dense_.size() || dense_[slot] == kAbsent) return std::nullopt;
      return dense_[slot];
    }
    const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), id,
                                     [](const IdEntry& e, int64_t v) { return e.id < v; });
    if (it == sorted_.end() || it->id != id) return std::nullopt;
    return it->index;
  }

 private:
  static constexpr uint32_t kAbsent = std::numeric_limits<uint32_t>::max();
  int64_t min_ = 0;
  std::vector<uint32_t> dense_;
  std::vector<IdEntry> sorted_;
};

}  // namespace mrcnn::dataset::coco_detail
