// The COCO side: an instance's area, box and segmentation as COCO files carry them, and one
// instances json a split.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dataset/import/imported_dataset.h"

namespace mrcnn::dataset::import {

// What an instance becomes in COCO. Polygons stay polygons (area from their pycocotools
// rasterisation, box from their points); a mask (merged with any polygons of the same
// instance) becomes a compressed RLE with pycocotools' area and box; a box alone has no
// segmentation and its own area.
struct CocoGeometry {
  std::optional<Rle> rle;  // set when the segmentation is an RLE
  double area = 0;
  Box bbox{};
};

CocoGeometry cocoGeometry(const ImportedInstance& instance, uint32_t width, uint32_t height);

struct CocoSplitOutput {
  std::vector<uint32_t> images;            // indices into the dataset's images, in output order
  std::vector<std::string> file_names;     // one an output image
  std::vector<uint32_t> instances;         // indices into the dataset's instances
};

// Writes one split's instances json. category_ids maps a label to its id; geometry is
// indexed like the dataset's instances. The annotations are formatted on `threads` threads
// (in chunks, joined in order: the file does not depend on the count).
void writeCocoSplit(const std::filesystem::path& path, const ImportedDataset& dataset,
                    const CocoSplitOutput& split, const std::vector<std::string>& categories,
                    const std::map<std::string, int64_t>& category_ids,
                    const std::vector<CocoGeometry>& geometry, unsigned threads = 1);

}  // namespace mrcnn::dataset::import
