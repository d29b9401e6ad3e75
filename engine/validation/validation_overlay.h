// What visualize_images_summary shows of an evaluation: a validation image as the model saw
// it (its resized region of the batch, the normalisation undone) with its detections scoring
// at least 0.5 drawn on it (engine/inference/overlay.h), PNG-encoded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dataset/loader/loader.h"
#include "engine/model/roi_heads.h"
#include "engine/validation/validator.h"

namespace mrcnn::engine {

// Image i of `batch` with `detections` (in the batch's resized pixels); labels map to
// category ids through `category_ids` (index = label) and to names through `names`.
ValidationOverlay drawValidationOverlay(const dataset::Batch& batch, size_t i,
                                        const model::Detections& detections,
                                        const std::vector<int64_t>& category_ids,
                                        const std::map<int64_t, std::string>& names);

}  // namespace mrcnn::engine
