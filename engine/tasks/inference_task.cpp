// The inference task: a model from the spec with its weights, run on an image or a folder of
// images (by default the spec's validation images); writes OUT/results.json (COCO results: one
// object per detection with image_id, file_name, category_id, bbox [x, y, w, h], score and a
// compressed-RLE segmentation), OUT/categories.json and an overlay image per input
// (OUT/<stem>.png). With --thresholds, detections below their class's threshold are dropped
// and the threshold in force is written beside each result, category and overlay label. As the
// inference task it speaks the events (start, progress per batch of images, a warning per
// unreadable image, done); run by another task (the train task's overlays) it prints lines of text.
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <opencv2/imgcodecs.hpp>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "io/json_writer.h"
#include "dataset/mask/rle.h"
#include "eval/class_thresholds.h"
#include "engine/exit_codes.h"
#include "engine/export/onnx_export.h"
#include "engine/inference/coco_results.h"
#include "engine/inference/image_input.h"
#include "engine/inference/libtorch_backend.h"
#include "engine/inference/openvino_backend.h"
#include "engine/inference/draft_annotations.h"
#include "engine/inference/overlay.h"
#include "engine/model/postprocess.h"
#include "engine/setup/categories.h"
#include "engine/runtime/task_device.h"
#include "engine/setup/model_config.h"
#include "engine/runtime/precision.h"
#include "engine/setup/weights.h"
#include "engine/setup/backend_setup.h"
#include "engine/events/task_report.h"
#include "engine/setup/data_files.h"
#include "engine/setup/weights_file.h"
#include "engine/runtime/process_memory.h"
#include "engine/tasks/tasks.h"
#include "engine/events/event_writer.h"
#include "engine/train/stop_signal.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// Detection k drawn: its box, score and category, its mask where there is one (a crop of a
// tiled image's detections covers its window only).
OverlayInstance overlayInstance(const CocoInstance& ci, const model::ImageDetections& result,
                                int64_t k) {
  OverlayInstance o;
  o.x1 = static_cast<float>(ci.bbox[0]);
  o.y1 = static_cast<float>(ci.bbox[1]);
  o.x2 = static_cast<float>(ci.bbox[0] + ci.bbox[2]);
  o.y2 = static_cast<float>(ci.bbox[1] + ci.bbox[3]);
  o.score = static_cast<float>(ci.score);
  o.category_id = ci.category_id;
  if (!result.masks.defined()) return o;
  o.mask = result.masks[k].data_ptr<uint8_t>();
  if (result.mask_origins.defined()) {
    o.mask_x = static_cast<int>(result.mask_origins[k][0].item<int64_t>());
    o.mask_y = static_cast<int>(result.mask_origins[k][1].item<int64_t>());
    o.mask_width = static_cast<int>(result.masks.size(2));
    o.mask_height = static_cast<int>(result.masks.size(1));
  }
  return o;
}

// Writes each image's detections into results.json and its overlay image.
class ResultWriter {
 public:
  ResultWriter(io::JsonWriter& json, const std::vector<Category>& categories,
               const std::map<std::string, int64_t>& image_ids, fs::path out_dir,
               double overlay_threshold, const eval::ClassThresholds& thresholds, bool overlays,
               DraftAnnotations* drafts)
      : json_(json),
        categories_(categories),
        image_ids_(image_ids),
        out_dir_(std::move(out_dir)),
        overlay_threshold_(overlay_threshold),
        thresholds_(thresholds),
        overlays_(overlays),
        drafts_(drafts) {
    for (const Category& c : categories_)
      category_ids_.push_back(c.id);
  }

  // Returns the number of detections drawn on the overlay.
  size_t write(const BackendImage& image, const fs::path& relative) {
    const auto found = image_ids_.find(relative.generic_string());
    const int64_t image_id = found != image_ids_.end() ? found->second : next_id_;
    ++next_id_;
    const model::ImageDetections& result = image.detections;
    const std::vector<CocoInstance> instances = cocoInstances(result, category_ids_);
    std::vector<OverlayInstance> overlay;
    std::vector<const CocoInstance*> drafted;
    for (size_t k = 0; k < instances.size(); ++k) {
      const CocoInstance& ci = instances[k];
      // The class's threshold, where one is in force, decides what is kept and drawn.
      const auto threshold = thresholds_.score.find(ci.category_id);
      const bool has_threshold = threshold != thresholds_.score.end();
      if (has_threshold && ci.score < threshold->second) {
        ++dropped_;
        continue;
      }
      json_.beginObject();
      json_.key("image_id").value(image_id);
      json_.key("file_name").value(relative.generic_string());
      json_.key("category_id").value(ci.category_id);
      json_.key("bbox").beginArray();
      for (double v : ci.bbox)
        json_.value(v);
      json_.endArray();
      json_.key("score").value(ci.score);
      if (has_threshold) json_.key("threshold").value(threshold->second);
      if (ci.mask) {
        json_.key("segmentation").beginObject();
        json_.key("size").beginArray().value(ci.mask->h).value(ci.mask->w).endArray();
        json_.key("counts").value(dataset::toCompressedString(*ci.mask));
        json_.endObject();
      }
      json_.endObject();
      ++detections_;
      if (has_threshold || ci.score >= overlay_threshold_) {
        drafted.push_back(&ci);
        overlay.push_back(overlayInstance(ci, result, static_cast<int64_t>(k)));
        overlay.back().name = categories_.at(static_cast<size_t>(ci.label)).name;
        overlay.back().threshold = has_threshold ? static_cast<float>(threshold->second) : -1.0f;
      }
    }
    if (drafts_) {
      drafts_->add(image_id, relative.generic_string(), static_cast<uint32_t>(image.original.cols),
                   static_cast<uint32_t>(image.original.rows), drafted);
    }
    if (!overlays_) return 0;
    cv::Mat drawn = image.original.clone();
    drawOverlay(drawn, overlay);
    std::vector<uint8_t> png;
    cv::imencode(".png", drawn, png);
    // An image outside the input folder (a json's "../photos/a.jpg") gets its overlay in the
    // output folder by its file name: nothing is written outside it.
    const bool outside = relative.is_absolute() || relative.begin() == relative.end() ||
                         *relative.begin() == "..";
    const fs::path overlay_path =
        out_dir_ / (outside ? fs::path() : relative.parent_path()) /
        (relative.stem().string() + ".png");
    std::error_code ec;
    fs::create_directories(overlay_path.parent_path(), ec);
    io::writeFileAtomic(overlay_path,
                        std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
    return overlay.size();
  }

  int64_t detections() const { return detections_; }
  int64_t dropped() const { return dropped_; }  // below their class's threshold

 private:
  io::JsonWriter& json_;
  const std::vector<Category>& categories_;
  const std::map<std::string, int64_t>& image_ids_;
  fs::path out_dir_;
  double overlay_threshold_;
  const eval::ClassThresholds& thresholds_;
  bool overlays_;
  DraftAnnotations* drafts_;
  std::vector<int64_t> category_ids_;
  int64_t next_id_ = 1;
  int64_t detections_ = 0;
  int64_t dropped_ = 0;
};

// The task once its reporting is set up: every outcome is reported through `report`.
int infer(const TaskOptions& options, const InferenceOptions& inference,
          const spec::LoadedSpec& loaded, const fs::path& run_dir, bool has_run_dir,
          const fs::path& out_dir, TaskReport& report, std::ostream& out) {
  const spec::Experiment& s = loaded.spec;
  const TaskDevice device = resolveDevice(s, options.spec_path);
  // The dataset first: without --images, the spec's validation images are the input. Nothing
  // else of it is required: its json, where present, names the categories.
  const bool from_spec = inference.images.empty();
  std::ostringstream data_log, data_err;
  const std::optional<DataFiles> data =
      prepareData(loaded, data_log, data_err,
                  DataNeeds{.train = false, .val_json = false, .val_images = from_spec});
  if (!data) {
    if (!data_log.str().empty()) report.log(data_log.str());
    return report.fail("bad_dataset", data_err.str(), kExitBadData);
  }
  const fs::path source = from_spec ? data->val_image_dir : inference.images;
  if (source.empty()) {
    std::string looked = "--images was not given and " + options.spec_path.string() +
                         " has no validation image folder to default to (looked for "
                         "data_config.val_image_dir and data_config.shapes_dataset";
    if (!s.data_config().validation_file_pattern().empty()) {
      looked += "; its validation_file_pattern shards hold no image files to run on";
    }
    return report.fail("usage", looked + "): give --images FILE_OR_DIR", kExitUsage);
  }
  std::vector<fs::path> images;
  // The spec's validation images are those its json lists (an imported data set references
  // its images where they are, not in val_image_dir); without a json, the folder's images.
  const bool from_json = (from_spec && !data->val_json.empty()) || !inference.image_list.empty();
  // A listed image's id is the json's (the results then belong to that data set).
  std::map<std::string, int64_t> listed_ids;
  try {
    if (from_json) {
      const dataset::CocoDataset list =
          dataset::loadCoco(inference.image_list.empty() ? data->val_json : inference.image_list);
      for (const dataset::CocoImage& image : list.images()) {
        images.push_back(source / fs::path(image.file_name));
        listed_ids[fs::path(image.file_name).generic_string()] = image.id;
      }
    } else {
      images = listImages(source);
    }
  } catch (const std::exception& e) {
    return report.fail(
        "bad_images",
        std::string(!inference.image_list.empty() ? inference.image_list.string() + ": "
                    : from_json                   ? "data_config.val_json_file: "
                    : from_spec ? "data_config.val_image_dir: "
                                : "--images: ") +
            e.what(),
        kExitBadData);
  }
  eval::ClassThresholds thresholds;
  if (!inference.thresholds.empty()) {
    try {
      thresholds = eval::loadClassThresholds(inference.thresholds);
    } catch (const std::exception& e) {
      return report.fail("bad_thresholds", std::string("--thresholds: ") + e.what(), kExitBadData);
    }
  }
  report.write(train::startEvent("inference", options.spec_path.string(),
                                 has_run_dir ? run_dir.string() : std::string(), device.name, 1,
                                 images.size(), 0, MRCNN_VERSION));
  if (report.events()) {
    report.log(std::to_string(images.size()) + (images.size() == 1 ? " image" : " images") +
               " from " + source.string() +
               (from_spec ? " (the spec's validation images; no --images given)" : "") +
               (inference.overlays ? "; results and overlays in " : "; results (no overlays) in ") +
               out_dir.string());
  }
  if (!data_log.str().empty()) report.log(data_log.str());

  // An exported model runs without weights of ours: the spec's model then only names the
  // classes.
  model::MaskRCNN net(nullptr);
  const fs::path weights =
      inference.onnx.empty() ? weightsFile(options.checkpoint, loaded, run_dir, &report) : fs::path();
  if (!inference.onnx.empty()) net = model::MaskRCNN(modelOptionsFromSpec(s, loaded.resolved));
  if (inference.onnx.empty()) {
    if (weights.empty()) {
      return report.fail("no_checkpoint", "no weights to run: " + weightsSearched(options.spec_path, run_dir),
                         kExitBadData);
    }
    try {
      WeightsReport w;
      net = loadModel(modelOptionsFromSpec(s, loaded.resolved), weights,
                      s.skip_checkpoint_variables(), &w);
      report.log("weights: " + weights.string() + " (" + w.kind + ", " + std::to_string(w.loaded) +
                 " tensors)");
    } catch (const std::exception& e) {
      return report.fail("bad_checkpoint", std::string("checkpoint: ") + e.what(), kExitBadData);
    }
  }
  std::map<std::string, int64_t> image_ids;
  std::vector<Category> categories;
  try {
    categories = categoryTable(namesJson(*data, report), net->numClasses(),
                               s.data_config().category_labels() == "category_id", &image_ids);
  } catch (const std::exception& e) {
    return report.fail("bad_dataset", std::string("categories: ") + e.what(), kExitBadData);
  }
  if (!inference.image_list.empty()) image_ids = std::move(listed_ids);
  if (!inference.thresholds.empty()) {
    std::string listed;
    for (const auto& [id, score] : thresholds.score) {
      const auto known = std::find_if(categories.begin() + 1, categories.end(),
                                      [&](const Category& c) { return c.id == id; });
      if (known == categories.end()) {
        report.warn("unknown_category", inference.thresholds.string() + ": category " +
                                            std::to_string(id) +
                                            " is not one of the model's: its threshold is unused");
        continue;
      }
      char item[96];
      std::snprintf(item, sizeof item, "%s%s >= %.3f", listed.empty() ? "" : ", ",
                    known->name.c_str(), score);
      listed += item;
    }
    report.log("per-class thresholds from " + thresholds.source + ": " +
               (listed.empty() ? std::string("none for this model's classes") : listed));
  }
  const auto relativeName = [&](const fs::path& path) {
    return fs::is_directory(source) ? path.lexically_relative(source) : path.filename();
  };

  std::unique_ptr<InferenceBackend> backend;
  const BackendRequest request{inference.backend, inference.onnx, inference.tile,
                               inference.streams};
  if (const int code = makeBackend(request, loaded, options.spec_path, device.name,
                                   has_run_dir ? run_dir : out_dir, std::move(net), categories,
                                   weights, report, backend);
      code != kExitOk) {
    return code;
  }
  report.log("backend: " + backend->description());

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    return report.fail("bad_output",
                       "--out: cannot create " + out_dir.string() + ": " + ec.message(),
                       kExitBadData);
  }

  std::ostringstream results;
  io::JsonWriter json(results);
  json.beginArray();
  std::optional<DraftAnnotations> drafts;
  if (!inference.out_annotations.empty()) {
    std::vector<std::pair<int64_t, std::string>> named;
    for (size_t l = 1; l < categories.size(); ++l) named.emplace_back(categories[l].id, categories[l].name);
    drafts.emplace(std::move(named));
  }
  ResultWriter writer{json,       categories, image_ids,         out_dir,
                      inference.overlay_threshold, thresholds, inference.overlays,
                      drafts ? &*drafts : nullptr};
  // Images a chunk (a progress event each): the spec's eval_batch_size; in throughput mode at
  // least four a stream, so that the streams wait for each other only at a chunk's end.
  const size_t streams = static_cast<size_t>(std::max(1, inference.streams));
  const size_t batch_size =
      std::max<size_t>({1, s.eval_batch_size(), streams > 1 ? 4 * streams : 1});
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  int64_t skipped = 0;
  size_t done = 0;
  std::string status = "ok";
  try {
    for (size_t first = 0; first < images.size(); first += batch_size) {
      // A stop request (SIGINT/SIGTERM) ends the run between batches, with the results so far.
      if (train::StopSignal::requested()) {
        status = "stopped";
        break;
      }
      const std::vector<fs::path> paths(images.begin() + static_cast<std::ptrdiff_t>(first),
                                        images.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                             images.size(), first + batch_size)));
      const BackendRun ran = backend->run(paths);
      for (const SkippedImage& bad : ran.skipped) {
        const auto found = image_ids.find(relativeName(bad.path).generic_string());
        report.warn("unreadable_image", bad.path.string() + ": " + bad.problem + "; skipped",
                    found != image_ids.end() ? found->second : 0);
        ++skipped;
      }
      for (size_t i = 0; i < ran.images.size(); ++i) {
        const BackendImage& image = ran.images[i];
        const size_t drawn = writer.write(image, relativeName(image.input.path));
        if (!report.events()) {
          out << "[" << first + i + 1 << "/" << images.size() << "] "
              << relativeName(image.input.path).generic_string() << ": "
              << image.detections.boxes.size(0) << " detections, " << drawn << " drawn ("
              << (thresholds.score.empty()
                      ? "score >= " + std::to_string(inference.overlay_threshold)
                      : std::string("per-class thresholds"))
              << ")\n";
        }
      }
      done = std::min(images.size(), first + batch_size);
      const double rate =
          static_cast<double>(done - static_cast<size_t>(skipped)) / std::max(1e-9, seconds());
      const double eta = rate > 0 ? static_cast<double>(images.size() - done) / rate : 0;
      report.write(train::itemProgressEvent(done, rate, eta, processResidentMiB()));
    }
  } catch (const std::exception& e) {
    return report.fail(
        e, "inference_failed",
        "image " + std::to_string(done + 1) + " of " + std::to_string(images.size()) + ": ",
        kExitFailed);
  }
  const int64_t detections = writer.detections();
  json.endArray();

  std::ostringstream cats;
  io::JsonWriter cj(cats);
  cj.beginArray();
  for (size_t l = 1; l < categories.size(); ++l) {
    cj.beginObject().key("id").value(categories[l].id).key("name").value(categories[l].name);
    if (const auto t = thresholds.score.find(categories[l].id); t != thresholds.score.end())
      cj.key("threshold").value(t->second);
    cj.endObject();
  }
  cj.endArray();
  const fs::path results_path = out_dir / "results.json";
  try {
    io::writeFileAtomic(results_path, results.str());
    io::writeFileAtomic(out_dir / "categories.json", cats.str());
    if (drafts) {
      std::error_code made;
      if (inference.out_annotations.has_parent_path())
        fs::create_directories(inference.out_annotations.parent_path(), made);
      io::writeFileAtomic(inference.out_annotations, drafts->json());
    }
  } catch (const std::exception& e) {
    return report.fail(e, "write_failed", "--out: ", kExitBadData);
  }
  const size_t ran = done - static_cast<size_t>(skipped);
  if (done > 0 && ran == 0) {
    return report.fail("no_readable_image",
                       "none of the " + std::to_string(images.size()) + " images in " +
                           source.string() + " could be read",
                       kExitBadData);
  }
  std::ostringstream summary;
  summary << ran << (ran == 1 ? " image" : " images");
  if (skipped > 0) summary << " (" << skipped << " unreadable, skipped)";
  if (status == "stopped") summary << " of " << images.size() << ", stopped on request";
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", seconds());
  summary << ", " << detections << " detections";
  if (!thresholds.score.empty())
    summary << " (" << writer.dropped() << " more below their class's threshold dropped)";
  summary << " in " << took << " s (" << backend->description() << "); results "
          << results_path.string();
  if (inference.overlays) summary << "; overlays in " << out_dir.string();
  if (drafts) {
    summary << "; draft annotations (" << drafts->annotations() << ") in "
            << inference.out_annotations.string();
  }
  if (report.events()) {
    report.write(train::doneEvent(status, summary.str(), report.elapsed()));
  } else {
    out << "inference: " << summary.str() << '\n';
  }
  return kExitOk;
}

}  // namespace

int runInference(const TaskOptions& options, const InferenceOptions& inference, std::ostream& out,
                 std::ostream& err) {
  // The run directory gets this inference's events when the inference is the run's: --run-dir
  // names it, or the outputs go into it (no --out). With --out elsewhere a trained run is only
  // read (its checkpoint), never written: the GUI's predictions, a spec's run looked at from
  // outside.
  const auto entry =
      TaskEntry("inference")
          .textReport(!inference.events)
          .gracefulStop(inference.events)
          .ownsRunDir([&](const fs::path&) {
            return !options.run_dir.empty() || inference.out.empty();
          });
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    const fs::path out_dir = inference.out.empty() ? task.run_dir / "inference" : inference.out;
    InferenceOptions chosen = inference;
    chosen.tile = chooseTiles(inference.tile, task.spec().spec);
    return infer(options, chosen, task.spec(), task.run_dir, task.has_run_dir, out_dir,
                 task.report, out);
  });
}

}  // namespace mrcnn::engine
