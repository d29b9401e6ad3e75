#include "engine/setup/categories.h"

#include "dataset/coco/coco.h"

namespace mrcnn::engine {

namespace fs = std::filesystem;

std::vector<Category> categoryTable(const fs::path& json, int64_t num_classes, bool labels_are_ids,
                                    std::map<std::string, int64_t>* image_ids) {
  std::vector<Category> table(static_cast<size_t>(num_classes));
  for (int64_t l = 0; l < num_classes; ++l) {
    table[static_cast<size_t>(l)] = {l, l == 0 ? "background" : "class " + std::to_string(l)};
  }
  if (json.empty()) return table;
  const dataset::CocoDataset coco = dataset::loadCoco(json);
  const auto categories = coco.categories();
  if (labels_are_ids) {  // torchvision's COCO models: label = category id
    for (const auto& c : categories) {
      if (c.id > 0 && c.id < num_classes) table[static_cast<size_t>(c.id)].name = c.name;
    }
  } else {
    for (size_t i = 0; i < categories.size() && i + 1 < table.size(); ++i) {
      table[i + 1] = {categories[i].id, categories[i].name};
    }
  }
  if (image_ids != nullptr) {
    for (const auto& image : coco.images())
      (*image_ids)[std::string(image.file_name)] = image.id;
  }
  return table;
}

fs::path namesJson(const DataFiles& data, TaskReport& report) {
  std::string missing;
  for (const fs::path& json : {data.val_json, data.train_json}) {
    if (json.empty()) continue;
    std::error_code ec;
    if (fs::is_regular_file(json, ec)) return json;
    if (missing.empty()) missing = json.string();
  }
  if (!missing.empty()) {
    report.warn("no_category_names",
                missing +
                    ": no such file; detections carry their labels as category ids and "
                    "are named \"class N\"");
  }
  return {};
}

}  // namespace mrcnn::engine
