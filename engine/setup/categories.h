// The model's contiguous labels as the dataset's categories: label i (1..num_classes-1) is
// the i-th category of the dataset json in id order (as the loader numbers them), or, for
// torchvision's COCO models (data_config.category_labels "category_id"), the category id
// itself. Label 0 is the background.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/events/task_report.h"
#include "engine/setup/data_files.h"

namespace mrcnn::engine {

struct Category {
  int64_t id = 0;
  std::string name;
};

// One entry per label; "class <label>" with the label as id where `json` is empty or names
// fewer categories. `image_ids`, when given, gets the json's file name -> image id.
std::vector<Category> categoryTable(const std::filesystem::path& json, int64_t num_classes,
                                    bool labels_are_ids,
                                    std::map<std::string, int64_t>* image_ids = nullptr);

// The dataset json that names the categories: the validation set's, else the training set's;
// none (labels as ids, "class N" as names) with a warning "no_category_names" when the spec
// names files this machine does not have.
std::filesystem::path namesJson(const DataFiles& data, TaskReport& report);

}  // namespace mrcnn::engine
