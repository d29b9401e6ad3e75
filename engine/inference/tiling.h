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
// union, the higher score — so an object cut by a tile border comes out once and whole. Only
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
