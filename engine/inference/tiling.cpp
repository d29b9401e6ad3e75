#include "engine/inference/tiling.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace mrcnn::engine {
namespace {

// The start of each tile along one side.
std::vector<int> starts(int side, int size, int stride) {
  if (side <= size) return {0};
  std::vector<int> out;
  for (int s = 0;; s += stride) {
    if (s + size >= side) {
      out.push_back(side - size);  // the last one ends at the edge
      break;
    }
    out.push_back(s);
  }
  return out;
}

// One detection of one tile, in the image's pixels; its mask as the crop under its box.
struct Candidate {
  std::array<float, 4> box{};
  float score = 0;
  int64_t label = 0;
  at::Tensor mask;  // uint8 [h, w] at (mask_x, mask_y), or undefined
  int mask_x = 0, mask_y = 0;
  size_t tile = 0;  // which of the tiles found it
  // The sides of its box (x0, y0, x1, y1) that reach a border of its tile inside the image:
  // there the tile saw part of the object, and other tiles' views of it may add the rest.
  std::array<bool, 4> cut{};
  bool isCut() const { return cut[0] || cut[1] || cut[2] || cut[3]; }
};

// How near (pixels) a box's side must come to a tile's inner border to count as cut there: a
// model's box of an object cut by the border ends within a pixel or two of it.
constexpr float kCutMargin = 3.0f;

std::array<bool, 4> cutByItsTile(const std::array<float, 4>& box, const Tile& tile, int height,
                                 int width) {
  const float x0 = static_cast<float>(tile.x), y0 = static_cast<float>(tile.y);
  const float x1 = x0 + static_cast<float>(tile.width), y1 = y0 + static_cast<float>(tile.height);
  return {tile.x > 0 && box[0] <= x0 + kCutMargin, tile.y > 0 && box[1] <= y0 + kCutMargin,
          tile.x + tile.width < width && box[2] >= x1 - kCutMargin,
          tile.y + tile.height < height && box[3] >= y1 - kCutMargin};
}

std::vector<Candidate> candidatesOf(const TileDetections& t, size_t tile, int height,
                                    int width) {
  std::vector<Candidate> out;
  const model::ImageDetections& d = t.detections;
  if (!d.boxes.defined() || d.boxes.size(0) == 0) return out;
  const at::Tensor boxes = d.boxes.to(at::kFloat).contiguous();
  const at::Tensor scores = d.scores.to(at::kFloat).contiguous();
  const at::Tensor labels = d.labels.to(at::kLong).contiguous();
  const float* b = boxes.data_ptr<float>();
  for (int64_t k = 0; k < boxes.size(0); ++k) {
    Candidate c;
    c.tile = tile;
    c.box = {b[4 * k] + static_cast<float>(t.tile.x), b[4 * k + 1] + static_cast<float>(t.tile.y),
             b[4 * k + 2] + static_cast<float>(t.tile.x),
             b[4 * k + 3] + static_cast<float>(t.tile.y)};
    c.score = scores.data_ptr<float>()[k];
    c.label = labels.data_ptr<int64_t>()[k];
    c.cut = cutByItsTile(c.box, t.tile, height, width);
    if (d.masks.defined()) {
      // The mask's pixels inside the tile under the box (pasting can spill a pixel past it:
      // the crop takes one more on each side).
      const int64_t h = d.masks.size(1), w = d.masks.size(2);
      const int64_t x0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(b[4 * k])) - 1, 0, w);
      const int64_t y0 =
          std::clamp<int64_t>(static_cast<int64_t>(std::floor(b[4 * k + 1])) - 1, 0, h);
      const int64_t x1 =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(b[4 * k + 2])) + 1, x0, w);
      const int64_t y1 =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(b[4 * k + 3])) + 1, y0, h);
      c.mask = d.masks[k].slice(0, y0, y1).slice(1, x0, x1).to(at::kByte).clone();
      c.mask_x = static_cast<int>(x0) + t.tile.x;
      c.mask_y = static_cast<int>(y0) + t.tile.y;
    }
    out.push_back(std::move(c));
  }
  return out;
}

float area(const std::array<float, 4>& b) {
  return std::max(0.0f, b[2] - b[0]) * std::max(0.0f, b[3] - b[1]);
}

float intersection(const std::array<float, 4>& a, const std::array<float, 4>& b) {
  const float w = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  return std::max(0.0f, w) * std::max(0.0f, h);
}

// IoU for nms, intersection over the smaller box for nmm.
float match(const std::array<float, 4>& a, const std::array<float, 4>& b, TileMerge merge) {
  const float inter = intersection(a, b);
  const float denominator =
      merge == TileMerge::kNms ? area(a) + area(b) - inter : std::min(area(a), area(b));
  return denominator > 0 ? inter / denominator : 0.0f;
}

// `into`'s mask or-ed with `from`'s, both in the image's pixels: the crop grows to hold both.
void mergeMask(Candidate& into, const Candidate& from) {
  if (!from.mask.defined()) return;
  if (!into.mask.defined()) {
    into.mask = from.mask.clone();
    into.mask_x = from.mask_x;
    into.mask_y = from.mask_y;
    return;
  }
  const int x0 = std::min(into.mask_x, from.mask_x), y0 = std::min(into.mask_y, from.mask_y);
  const int x1 = std::max(into.mask_x + static_cast<int>(into.mask.size(1)),
                          from.mask_x + static_cast<int>(from.mask.size(1)));
  const int y1 = std::max(into.mask_y + static_cast<int>(into.mask.size(0)),
                          from.mask_y + static_cast<int>(from.mask.size(0)));
  at::Tensor grown = at::zeros({y1 - y0, x1 - x0}, at::kByte);
  for (const Candidate* c : {static_cast<const Candidate*>(&into), &from}) {
    at::Tensor window = grown.slice(0, c->mask_y - y0, c->mask_y - y0 + c->mask.size(0))
                            .slice(1, c->mask_x - x0, c->mask_x - x0 + c->mask.size(1));
    window.copy_(at::maximum(window, c->mask));
  }
  into.mask = grown;
  into.mask_x = x0;
  into.mask_y = y0;
}

// The mask's pixels outside the box (and the pixel of pasting spill beside it) cleared: a
// merged view adds the part of the object beyond a cut side, not what lies past the others.
void clipMaskToBox(Candidate& c) {
  if (!c.mask.defined()) return;
  const int64_t h = c.mask.size(0), w = c.mask.size(1);
  const auto local = [](float v, int origin, int64_t size) {
    return std::clamp<int64_t>(static_cast<int64_t>(v) - origin, 0, size);
  };
  const int64_t x0 = local(std::floor(c.box[0]) - 1, c.mask_x, w);
  const int64_t y0 = local(std::floor(c.box[1]) - 1, c.mask_y, h);
  const int64_t x1 = std::max(x0, local(std::ceil(c.box[2]) + 1, c.mask_x, w));
  const int64_t y1 = std::max(y0, local(std::ceil(c.box[3]) + 1, c.mask_y, h));
  at::Tensor kept = at::zeros_like(c.mask);
  kept.slice(0, y0, y1).slice(1, x0, x1).copy_(c.mask.slice(0, y0, y1).slice(1, x0, x1));
  c.mask = kept;
}

// The kept detections' masks as crops of one size (the largest crop's, each placed to hold
// its own inside the image): masks of the whole image, hundreds of them at 2000 x 2000, would
// take gigabytes, and writing and reading them cost more than the model.
void placeMasks(const std::vector<Candidate>& kept, int height, int width,
                model::ImageDetections& out) {
  int64_t h = 1, w = 1;
  for (const Candidate& c : kept) {
    if (!c.mask.defined()) continue;
    h = std::max(h, c.mask.size(0));
    w = std::max(w, c.mask.size(1));
  }
  h = std::min<int64_t>(h, height);
  w = std::min<int64_t>(w, width);
  const int64_t n = static_cast<int64_t>(kept.size());
  out.masks = at::zeros({n, h, w}, at::kByte);
  out.mask_origins = at::zeros({n, 2}, at::kLong);
  out.image_size = {height, width};
  int64_t* origins = out.mask_origins.data_ptr<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    const Candidate& c = kept[static_cast<size_t>(k)];
    if (!c.mask.defined()) continue;
    // A crop lies inside the image, so moving its window back from the edges keeps it whole.
    const int64_t x = std::max<int64_t>(0, std::min<int64_t>(c.mask_x, width - w));
    const int64_t y = std::max<int64_t>(0, std::min<int64_t>(c.mask_y, height - h));
    origins[2 * k] = x;
    origins[2 * k + 1] = y;
    out.masks[k]
        .slice(0, c.mask_y - y, c.mask_y - y + c.mask.size(0))
        .slice(1, c.mask_x - x, c.mask_x - x + c.mask.size(1))
        .copy_(c.mask);
  }
}

}  // namespace

void checkTileOptions(const TileOptions& o) {
  if (o.size < 32) {
    throw std::invalid_argument("--tile " + std::to_string(o.size) +
                                ": a tile's side in pixels, at least 32");
  }
  if (!(o.overlap >= 0) || o.overlap >= 1) {
    throw std::invalid_argument("--tile-overlap " + std::to_string(o.overlap) +
                                ": the share of a tile its neighbour overlaps, in [0, 1)");
  }
  if (!(o.match_threshold > 0) || o.match_threshold > 1) {
    throw std::invalid_argument("--tile-match-threshold " + std::to_string(o.match_threshold) +
                                ": in (0, 1]");
  }
}

TileMerge parseTileMerge(const std::string& text) {
  if (text == "nms") return TileMerge::kNms;
  if (text == "nmm") return TileMerge::kNmm;
  throw std::invalid_argument("--tile-merge " + text + ": use nms or nmm");
}

std::vector<Tile> tileGrid(int height, int width, const TileOptions& o) {
  const int stride =
      std::max(1, o.size - static_cast<int>(std::lround(o.overlap * static_cast<double>(o.size))));
  std::vector<Tile> out;
  for (int y : starts(height, o.size, stride)) {
    for (int x : starts(width, o.size, stride))
      out.push_back({x, y, std::min(o.size, width), std::min(o.size, height)});
  }
  return out;
}

model::ImageDetections mergeTiles(const std::vector<TileDetections>& tiles, int height, int width,
                                  const TileOptions& o) {
  std::vector<Candidate> all;
  bool with_masks = false;
  for (size_t i = 0; i < tiles.size(); ++i) {
    with_masks = with_masks || tiles[i].detections.masks.defined();
    for (Candidate& c : candidatesOf(tiles[i], i, height, width))
      all.push_back(std::move(c));
  }
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return all[a].score > all[b].score; });

  // Greedy, by decreasing score, against the original boxes, across tiles only.
  std::vector<bool> gone(all.size(), false);
  std::vector<Candidate> kept;
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t a = order[i];
    if (gone[a]) continue;
    Candidate merged = all[a];
    bool grown = false;
    for (size_t j = i + 1; j < order.size(); ++j) {
      const size_t b = order[j];
      if (gone[b] || all[b].label != all[a].label || all[b].tile == all[a].tile) continue;
      if (match(all[a].box, all[b].box, o.merge) <= o.match_threshold) continue;
      gone[b] = true;
      // Only a view that is itself cut grows, and only past its cut sides: a tile that saw
      // the whole object (or that side of it) has it already, and another tile's matching
      // detection there (a larger false box around it, say) is a duplicate, dropped as nms
      // drops it.
      if (o.merge == TileMerge::kNmm && all[a].isCut()) {
        for (size_t k = 0; k < 4; ++k) {
          if (!all[a].cut[k]) continue;
          merged.box[k] = k < 2 ? std::min(merged.box[k], all[b].box[k])
                                : std::max(merged.box[k], all[b].box[k]);
        }
        mergeMask(merged, all[b]);
        grown = true;
      }
    }
    if (grown) clipMaskToBox(merged);
    kept.push_back(std::move(merged));
  }

  model::ImageDetections out;
  const int64_t n = static_cast<int64_t>(kept.size());
  out.boxes = at::empty({n, 4}, at::kFloat);
  out.scores = at::empty({n}, at::kFloat);
  out.labels = at::empty({n}, at::kLong);
  float* boxes = out.boxes.data_ptr<float>();
  float* scores = out.scores.data_ptr<float>();
  int64_t* labels = out.labels.data_ptr<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    const Candidate& c = kept[static_cast<size_t>(k)];
    std::copy(c.box.begin(), c.box.end(), boxes + 4 * k);
    scores[k] = c.score;
    labels[k] = c.label;
  }
  if (with_masks) placeMasks(kept, height, width, out);
  return out;
}

}  // namespace mrcnn::engine
