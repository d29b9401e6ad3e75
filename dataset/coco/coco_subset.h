// A COCO file cut down to some of its images: those images, their annotations, and every other
// member (categories, info, licenses...) as it was. The kept entries are copied as they are
// written (key order and numbers unchanged), so a subset of a subset is the same file. Used
// to split a data set into folds (label_check --folds).
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

namespace mrcnn::dataset {

// The subset as JSON text. Throws CocoError naming `path` when it cannot be read or is not a
// COCO object with images and annotations arrays.
std::string cocoSubset(const std::filesystem::path& path, const std::set<int64_t>& image_ids);

}  // namespace mrcnn::dataset
