// torchvision's COCO categories in the label order of its COCO-trained detectors (91 labels:
// 0 the background, the COCO category ids 1..90, "N/A" where COCO has no category), from
// resources/coco_categories.txt (compiled in). A data set whose classes carry COCO names
// starts from COCO's rows of the class-dependent tensors (engine/setup/weights.cpp); the
// GUI can show that mapping before a run.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::weights {

// The 91 names, index = torchvision's label.
const std::vector<std::string>& cocoCategoryNames();

// torchvision's COCO label of a class name: its name or one of its other names (PASCAL VOC's
// "motorbike", "aeroplane", "sofa", "tvmonitor", ...), compared without regard to case and
// to leading or trailing blanks. None for other names, for "N/A" and for the background.
std::optional<int> cocoLabelOf(std::string_view class_name);

}  // namespace mrcnn::weights
