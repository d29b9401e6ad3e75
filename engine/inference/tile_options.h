// What tiled inference is asked for (--tile, --tile-overlap, --tile-full, --tile-merge): the
// options alone, for the command line and the tasks' options; engine/inference/tiling.h
// does the work.
#pragma once

#include <string>

namespace mrcnn::engine {

enum class TileMerge { kNms, kNmm };

struct TileOptions {
  int size = 0;             // 0: no tiling
  double overlap = 0.2;     // share of `size`, in [0, 1)
  bool full_image = false;  // also the whole image, as the backend resizes it
  TileMerge merge = TileMerge::kNmm;
  double match_threshold = 0.5;
  // Whether --tile was on the command line (--tile 0: whole images, whatever the spec says);
  // without it, the spec's data_config tile fields decide (tileOptionsFromSpec).
  bool given = false;
};

// Throws std::invalid_argument naming the flag (--tile, --tile-overlap) when out of range.
void checkTileOptions(const TileOptions& options);
// "nms" or "nmm"; throws std::invalid_argument naming --tile-merge otherwise.
TileMerge parseTileMerge(const std::string& text);

}  // namespace mrcnn::engine
