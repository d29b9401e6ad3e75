// The resource files this library reads, compiled in by weights/CMakeLists.txt (from
// embedded_resources.cpp.in), so that the program needs no installed data folder.
#pragma once

#include <string_view>

namespace mrcnn::weights::embedded {

extern const std::string_view kWeightsCatalogue;  // resources/weights_catalogue.json
extern const std::string_view kCocoCategories;    // resources/coco_categories.txt

}  // namespace mrcnn::weights::embedded
