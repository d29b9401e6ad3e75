// The inference task: a model from the spec with its weights, run on an image or a folder of
// images; writes OUT/results.json (COCO results: one object per detection with image_id,
// file_name, category_id, bbox [x, y, w, h], score and a compressed-RLE segmentation),
// OUT/categories.json and an overlay image per input (OUT/<stem>.png).
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "dataset/json_writer.h"
#include "dataset/rle.h"
#include "engine/coco_results.h"
#include "engine/device.h"
#include "engine/exit_codes.h"
#include "engine/image_input.h"
#include "engine/model/postprocess.h"
#include "engine/model_config.h"
#include "engine/overlay.h"
#include "engine/tasks/task_common.h"
#include "engine/tasks/tasks.h"
#include "engine/util/atomic_file.h"
#include "engine/weights.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

struct Category {
  int64_t id = 0;
  std::string name;
};

// Contiguous label -> category, from the dataset json the model was trained on (label i is
// the i-th category in id order, as the loader numbers them); "class <label>" without one.
std::vector<Category> categoryTable(const DataFiles& data, int64_t num_classes,
                                    bool labels_are_ids,
                                    std::map<std::string, int64_t>* image_ids) {
  std::vector<Category> table(static_cast<size_t>(num_classes));
  for (int64_t l = 0; l < num_classes; ++l) {
    table[static_cast<size_t>(l)] = {l, l == 0 ? "background" : "class " + std::to_string(l)};
  }
  const fs::path json = !data.val_json.empty() ? data.val_json : data.train_json;
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
  for (const auto& image : coco.images()) (*image_ids)[std::string(image.file_name)] = image.id;
  return table;
}

// Where the weights come from: --checkpoint, the run directory's last checkpoint, or the
// spec's checkpoint field.
fs::path weightsFile(const TaskOptions& options, const spec::LoadedSpec& loaded,
                     const fs::path& run_dir) {
  if (!options.checkpoint.empty()) return options.checkpoint;
  const fs::path last = run_dir / "checkpoints" / "last";
  std::error_code ec;
  if (fs::is_regular_file(last, ec)) {
    std::ifstream in(last);
    std::string name;
    std::getline(in, name);
    if (!name.empty()) {
      const fs::path p(name);
      return p.is_absolute() ? p : run_dir / "checkpoints" / p;
    }
  }
  if (!loaded.spec.checkpoint().empty()) {
    const fs::path p(loaded.spec.checkpoint());
    return p.is_absolute() ? p : loaded.resolved.spec_dir / p;
  }
  return {};
}

}  // namespace

int runInference(const TaskOptions& options, const InferenceOptions& inference, std::ostream& out,
                 std::ostream& err) {
  const std::optional<spec::LoadedSpec> maybe = loadSpecReporting(options, err);
  if (!maybe) return kExitBadSpec;
  const spec::LoadedSpec& loaded = *maybe;
  const spec::Experiment& s = loaded.spec;
  const fs::path run_dir = runDirectory(options, loaded);
  const fs::path out_dir = inference.out.empty() ? run_dir / "inference" : inference.out;

  const RuntimeInfo runtime = runtimeInfo();
  const DeviceChoice device = chooseDevice(s.device(), runtime);
  if (!device.ok) {
    err << options.spec_path.string() << ": error: device: " << device.error << '\n';
    return kExitBadSpec;
  }

  std::vector<fs::path> images;
  try {
    if (inference.images.empty()) {
      err << "error: --images: give an image file or a folder of images\n";
      return kExitUsage;
    }
    images = listImages(inference.images);
  } catch (const std::exception& e) {
    err << "error: --images: " << e.what() << '\n';
    return kExitBadData;
  }

  const std::optional<DataFiles> data = prepareData(loaded, out, err);
  if (!data) return kExitBadData;
  model::MaskRCNN net(modelOptionsFromSpec(s, loaded.resolved));
  const fs::path weights = weightsFile(options, loaded, run_dir);
  if (weights.empty()) {
    err << "error: no weights to run: give --checkpoint, set the spec's checkpoint, or train "
           "in the run directory "
        << run_dir.string() << " first\n";
    return kExitBadData;
  }
  try {
    const WeightsReport report = loadWeights(*net, weights, s.skip_checkpoint_variables());
    out << "weights: " << weights.string() << " (" << report.kind << ", " << report.loaded
        << " tensors)\n";
  } catch (const std::exception& e) {
    err << "error: checkpoint: " << e.what() << '\n';
    return kExitBadData;
  }
  std::map<std::string, int64_t> image_ids;
  std::vector<Category> categories;
  try {
    categories = categoryTable(*data, net->numClasses(),
                               s.data_config().category_labels() == "category_id", &image_ids);
  } catch (const std::exception& e) {
    err << "error: categories: " << e.what() << '\n';
    return kExitBadData;
  }

  const c10::Device torch_device(device.name);
  net->to(torch_device);
  net->prepareForInference();
  torch::NoGradGuard no_grad;

  InputOptions input;
  const auto& d = s.data_config();
  input.resize.mode = d.resize_mode() == "shorter_side" ? dataset::ResizeMode::kShorterSide
                                                         : dataset::ResizeMode::kFixed;
  input.resize.canvas_height = loaded.resolved.image_height;
  input.resize.canvas_width = loaded.resolved.image_width;
  input.resize.min_size = static_cast<int>(d.min_size());
  input.resize.max_size = static_cast<int>(d.max_size());
  input.pad_multiple = input.resize.mode == dataset::ResizeMode::kShorterSide
                           ? static_cast<int>(d.size_divisibility())
                           : 1 << s.maskrcnn_config().max_level();

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    err << "error: --out: cannot create " << out_dir.string() << ": " << ec.message() << '\n';
    return kExitBadData;
  }

  std::ostringstream results;
  dataset::JsonWriter json(results);
  json.beginArray();
  const size_t batch_size = std::max<uint32_t>(1, s.eval_batch_size());
  const auto started = std::chrono::steady_clock::now();
  int64_t next_id = 1, detections = 0, skipped = 0;
  for (size_t first = 0; first < images.size(); first += batch_size) {
    std::vector<fs::path> paths;
    for (size_t i = first; i < std::min(images.size(), first + batch_size); ++i) {
      paths.push_back(images[i]);
    }
    InputBatch batch;
    try {
      batch = readImages(paths, input);
    } catch (const ImageReadError&) {
      // One bad file must not cost the others: read them one by one, skip the bad ones.
      std::vector<fs::path> good;
      for (const auto& p : paths) {
        try {
          readImages({p}, input);
          good.push_back(p);
        } catch (const ImageReadError& e) {
          err << "warning: " << e.what() << "; skipped\n";
          ++skipped;
        }
      }
      if (good.empty()) continue;
      batch = readImages(good, input);
    }
    const std::vector<model::Detections> dets =
        net->detect(batch.images.to(torch_device), batch.sizes);
    for (size_t i = 0; i < dets.size(); ++i) {
      const InputImage& in = batch.inputs[i];
      const fs::path relative = fs::is_directory(inference.images)
                                    ? in.path.lexically_relative(inference.images)
                                    : in.path.filename();
      const auto found = image_ids.find(relative.generic_string());
      const int64_t image_id = found != image_ids.end() ? found->second : next_id;
      ++next_id;
      model::Detections cpu{dets[i].boxes.cpu(), dets[i].scores.cpu(), dets[i].labels.cpu(),
                            dets[i].masks.defined() ? dets[i].masks.cpu() : at::Tensor()};
      const model::ImageDetections result = model::toOriginalImage(
          cpu, {in.height, in.width}, {in.original_height, in.original_width});
      std::vector<int64_t> category_ids;
      for (const Category& c : categories) category_ids.push_back(c.id);
      const std::vector<CocoInstance> instances = cocoInstances(result, category_ids);
      std::vector<OverlayInstance> overlay;
      for (size_t k = 0; k < instances.size(); ++k) {
        const CocoInstance& ci = instances[k];
        json.beginObject();
        json.key("image_id").value(image_id);
        json.key("file_name").value(relative.generic_string());
        json.key("category_id").value(ci.category_id);
        json.key("bbox").beginArray();
        for (double v : ci.bbox) json.value(v);
        json.endArray();
        json.key("score").value(ci.score);
        if (ci.mask) {
          json.key("segmentation").beginObject();
          json.key("size").beginArray().value(ci.mask->h).value(ci.mask->w).endArray();
          json.key("counts").value(dataset::toCompressedString(*ci.mask));
          json.endObject();
        }
        json.endObject();
        ++detections;
        if (ci.score >= inference.overlay_threshold) {
          const auto& name = categories.at(static_cast<size_t>(ci.label)).name;
          overlay.push_back({static_cast<float>(ci.bbox[0]), static_cast<float>(ci.bbox[1]),
                             static_cast<float>(ci.bbox[0] + ci.bbox[2]),
                             static_cast<float>(ci.bbox[1] + ci.bbox[3]),
                             static_cast<float>(ci.score), ci.category_id, name,
                             result.masks.defined()
                                 ? result.masks[static_cast<int64_t>(k)].data_ptr<uint8_t>()
                                 : nullptr});
        }
      }
      cv::Mat image = cv::imread(in.path.string(), cv::IMREAD_COLOR);
      drawOverlay(image, overlay);
      std::vector<uint8_t> png;
      cv::imencode(".png", image, png);
      const fs::path overlay_path = out_dir / relative.parent_path() /
                                    (relative.stem().string() + ".png");
      fs::create_directories(overlay_path.parent_path(), ec);
      writeFileAtomic(overlay_path,
                      std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
      out << "[" << first + i + 1 << "/" << images.size() << "] " << relative.generic_string()
          << ": " << result.boxes.size(0) << " detections, " << overlay.size()
          << " drawn (score >= " << inference.overlay_threshold << ")\n";
    }
  }
  json.endArray();

  std::ostringstream cats;
  dataset::JsonWriter cj(cats);
  cj.beginArray();
  for (size_t l = 1; l < categories.size(); ++l) {
    cj.beginObject().key("id").value(categories[l].id).key("name").value(categories[l].name);
    cj.endObject();
  }
  cj.endArray();
  try {
    writeFileAtomic(out_dir / "results.json", results.str());
    writeFileAtomic(out_dir / "categories.json", cats.str());
  } catch (const std::exception& e) {
    err << "error: --out: " << e.what() << '\n';
    return kExitBadData;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out << "inference: " << images.size() - static_cast<size_t>(skipped) << " images, "
      << detections << " detections in " << seconds << " s on " << device.name << "; results "
      << (out_dir / "results.json").string() << '\n';
  return skipped == static_cast<int64_t>(images.size()) ? kExitBadData : kExitOk;
}

}  // namespace mrcnn::engine
