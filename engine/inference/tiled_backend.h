// A backend that runs another on tiles (engine/inference/tiling.h): each image file decoded,
// cut into the grid's tiles (plus the whole image with full_image), the tiles run by the inner
// backend a few at a time, and the detections merged in the file's pixels. An image no larger
// than a tile is run whole, as without tiling.
#pragma once

#include <memory>

#include "engine/inference/backend.h"
#include "engine/inference/tiling.h"

namespace mrcnn::engine {

// `options` checked by checkTileOptions.
std::unique_ptr<InferenceBackend> makeTiledBackend(std::unique_ptr<InferenceBackend> inner,
                                                   const TileOptions& options);

}  // namespace mrcnn::engine
