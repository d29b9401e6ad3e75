// Tiled inference for images much larger than the model's input: the image cut into
// overlapping tiles (and, optionally, the whole image as one more "tile"), each run by a
// backend, and the detections merged back in the image's own pixels.
//
// The grid: tiles of size x size pixels, neighbours overlapping by round(overlap x size); the
// last row and column are moved back to end at the image's edge, so no tile reaches outside
// the image whatever its size; a side no longer than `size` is one tile of that side (an
// image smaller than a tile is not tiled).
//
// The merge, over all tiles' detections by decreasing score: `nms` keeps a detection unless a
// kept one of its class overlaps its box by IoU above `match_threshold`; `nmm` (greedy
// non-maximum merging, SAHI's default: intersection over the smaller box above the
// threshold) merges each such detection into the kept one — the boxes' union, the masks'
// union, the higher score — so an object cut by a tile border comes out once and whole. The
// kept detection grows only past the sides where its own tile cut it (its box reaches a
// border of the tile inside the image), and its mask is clipped to the grown box: a detection
// a tile saw whole is not grown by another tile's matching one, which is dropped as nms drops
// it. A larger low-score false box around a small object matches it at an intersection over
// the smaller box of 1, and its union replaced the right box: on the tiling benchmark's model
// trained on an AMX Xeon (docs/BENCHMARKS.md, 2026-11-30), bbox AP 0.653 with the plain union,
// 0.723 growing cut views only, 0.782 growing them past their cut sides only; nms 0.755. Only
// detections of different tiles are matched: within one tile the model's own NMS has already
// decided, and merging there would join neighbours (a small object inside a larger false box
// is "covered" by it at an intersection over the smaller box of 1).
#pragma once

#include <string>
#include <vector>

#include "engine/inference/tile_options.h"
#include "engine/model/postprocess.h"

namespace mrcnn::engine {

struct Tile {
  int x = 0, y = 0, width = 0, height = 0;
};

std::vector<Tile> tileGrid(int height, int width, const TileOptions& options);

// One tile's detections in the tile's own pixels (boxes xyxy, masks uint8 [K, h, w] at the
// tile's size, or undefined).
struct TileDetections {
  Tile tile;
  model::ImageDetections detections;
};

// The detections of the whole image (height x width): boxes in its pixels, by decreasing
// score; masks as crops (ImageDetections::mask_origins: uint8 [N, h, w] of one size, each
// placed to hold its detection's mask), undefined when the tiles had none.
model::ImageDetections mergeTiles(const std::vector<TileDetections>& tiles, int height, int width,
                                  const TileOptions& options);

}  // namespace mrcnn::engine
