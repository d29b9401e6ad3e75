// The export task: the spec's model with its weights (as inference picks them) written for
// deployment into a new folder — model.onnx (engine/export/onnx_export.h), model.pth (a
// state_dict torchvision's maskrcnn_resnet50_fpn loads, when the model has its
// architecture), labels.txt, optionally a DeepStream nvinfer config, and export_report.json.
// The folder is assembled beside its final place and renamed into it: an export is whole or
// absent, and never replaces an earlier one.
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "io/json_writer.h"
#include "engine/exit_codes.h"
#include "engine/export/deepstream_config.h"
#include "engine/export/onnx_export.h"
#include "engine/export/torchvision_compat.h"
#include "engine/setup/categories.h"
#include "engine/runtime/device.h"
#include "engine/runtime/precision.h"
#include "engine/setup/model_config.h"
#include "engine/setup/weights.h"
#include "engine/validation/export_report.h"
#include "engine/events/task_report.h"
#include "engine/setup/data_files.h"
#include "engine/setup/weights_file.h"
#include "io/staging_dir.h"
#include "engine/tasks/export_int8.h"
#include "engine/tasks/tasks.h"
#include "engine/events/event_writer.h"
#include "io/atomic_file.h"
#include "io/write_error.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// <run dir>/export/<weights stem>, or with -2, -3... when taken.
fs::path defaultExportDir(const fs::path& run_dir, const fs::path& weights) {
  const fs::path base = run_dir / "export" / weights.stem();
  std::error_code ec;
  if (!fs::exists(base, ec)) return base;
  for (int n = 2;; ++n) {
    fs::path candidate = base;
    candidate += "-" + std::to_string(n);
    if (!fs::exists(candidate, ec)) return candidate;
  }
}

std::string labelsText(const std::vector<Category>& categories) {
  std::string text;
  for (const Category& c : categories)
    text += c.name + "\n";
  return text;
}

// The "int8" object: the calibration, every candidate layer and what was decided, and the
// comparison with fp32.
void writeInt8Json(io::JsonWriter& j, const Int8Result& int8, const ExportOptions& options,
                   const ExportParity& parity) {
  j.key("int8").beginObject();
  j.key("file").value("model.int8.onnx");
  j.key("nodes").value(int8.model.nodes);
  j.key("weight_bytes").value(int8.model.weight_bytes);
  j.key("calibration").beginObject();
  j.key("images").value(int8.images);
  j.key("cache").value(int8.cache.string());
  j.key("reused").value(int8.cache_reused);
  j.key("range").value(int8.range);
  j.key("range_asked").value(options.cal_range);
  if (!int8.range_why.empty()) j.key("range_why").value(int8.range_why);
  j.key("percentile").value(int8.percentile);
  j.key("seconds").value(int8.calibration_seconds);
  int64_t corrected = 0;
  for (const exporter::LayerDecision& d : int8.model.layers)
    corrected += d.bias_corrected ? 1 : 0;
  j.key("bias_correction").value(options.bias_correction);
  j.key("biases_corrected").value(corrected);
  j.endObject();
  j.key("layers").beginArray();
  for (const exporter::LayerDecision& d : int8.model.layers) {
    j.beginObject();
    j.key("weights").value(d.weight);
    j.key("op").value(d.op);
    j.key("quantised").value(d.quantised);
    j.key("why").value(d.why);
    if (d.bias_corrected) {
      j.key("bias_shift").beginObject();
      j.key("mean_abs").value(d.bias_shift_mean);
      j.key("max_abs").value(d.bias_shift_max);
      j.endObject();
    }
    j.endObject();
  }
  j.endArray();
  if (parity.int8) writeInt8ParityJson(j, *parity.int8);
  j.endObject();
}

std::string reportJson(const exporter::OnnxModel& onnx, const exporter::TorchvisionCompat& tv,
                       const fs::path& weights, const ExportOptions& options, bool ds_config,
                       const ExportParity& parity, const exporter::ParityTolerance& tolerance,
                       const std::optional<Int8Result>& int8) {
  std::ostringstream s;
  io::JsonWriter j(s);
  j.beginObject();
  j.key("weights").value(weights.string());
  j.key("onnx").beginObject();
  j.key("file").value("model.onnx");
  j.key("opset").value(static_cast<int64_t>(options.opset));
  j.key("nodes").value(onnx.nodes);
  j.key("initializers").value(onnx.initializers);
  j.key("weight_bytes").value(onnx.weight_bytes);
  j.key("checker").value("passed");
  j.key("shape_inference").value("passed");
  j.endObject();
  j.key("torchvision").beginObject();
  j.key("file").value(tv.compatible ? "model.pth" : "");
  j.key("note").value(tv.note);
  if (tv.compatible) {
    j.key("kwargs").beginObject();
    j.key("weights").value(nullptr);
    j.key("weights_backbone").value(nullptr);
    for (const auto& [name, value] : tv.kwargs)
      j.key(name).value(value);
    j.endObject();
    j.key("same_detections").value(tv.same_detections);
  }
  j.endObject();
  j.key("labels").value("labels.txt");
  j.key("deepstream_config").value(ds_config ? "nvinfer_config.txt" : "");
  writeParityJson(j, parity, tolerance);
  if (int8) writeInt8Json(j, *int8, options, parity);
  j.endObject();
  return s.str();
}

// The images of the parity check: --images, else the spec's validation images with their
// annotations (the first eval_samples of the json), else none.
ParityInputs parityInputs(const ExportOptions& ex, const spec::LoadedSpec& loaded,
                          const DataFiles& data, const std::vector<Category>& categories,
                          TaskReport& report) {
  ParityInputs in;
  for (const Category& c : categories)
    in.category_ids.push_back(c.id);
  in.with_masks = loaded.spec.maskrcnn_config().include_mask();
  std::error_code ec;
  if (!ex.images.empty()) {
    in.files = listImages(ex.images);
    in.root = fs::is_directory(ex.images, ec) ? ex.images : ex.images.parent_path();
    return in;
  }
  if (data.val_image_dir.empty() || !fs::is_directory(data.val_image_dir, ec)) return in;
  in.root = data.val_image_dir;
  const uint32_t limit = loaded.spec.data_config().eval_samples();
  if (!data.val_json.empty() && fs::is_regular_file(data.val_json, ec)) {
    try {
      in.ground_truth =
          std::make_shared<const dataset::CocoDataset>(dataset::loadCoco(data.val_json));
    } catch (const std::exception& e) {
      report.warn("bad_dataset", data.val_json.string() + ": " + e.what() + "; parity without mAP");
    }
  }
  if (in.ground_truth) {
    for (const auto& image : in.ground_truth->images()) {
      if (limit > 0 && in.files.size() >= limit) break;
      in.files.push_back(in.root / std::string(image.file_name));
      in.image_ids[std::string(image.file_name)] = image.id;
    }
  } else {
    in.files = listImages(in.root);
    if (limit > 0 && in.files.size() > limit) in.files.resize(limit);
  }
  return in;
}

// The images int8 calibrates on: --cal_image_dir, else the spec's validation images.
std::vector<fs::path> calibrationImages(const ExportOptions& ex, const DataFiles& data) {
  std::error_code ec;
  if (!ex.cal_image_dir.empty()) {
    if (!fs::is_directory(ex.cal_image_dir, ec)) {
      throw Int8Refused("no_calibration_images",
                        "--cal_image_dir " + ex.cal_image_dir.string() + ": not a folder");
    }
    return listImages(ex.cal_image_dir);
  }
  if (data.val_image_dir.empty() || !fs::is_directory(data.val_image_dir, ec)) return {};
  return listImages(data.val_image_dir);
}

int exportModel(const TaskOptions& options, const ExportOptions& ex, const spec::LoadedSpec& loaded,
                const fs::path& run_dir, bool has_run_dir, TaskReport& report) {
  const spec::Experiment& s = loaded.spec;
  std::ostringstream data_log, data_err;
  const std::optional<DataFiles> data =
      prepareData(loaded, data_log, data_err,
                  DataNeeds{.train = false, .val_json = false, .val_images = false});
  if (!data) return report.fail("bad_dataset", data_err.str(), kExitBadData);

  model::MaskRCNN net(nullptr);
  // Resolved once (a name is downloaded or hash-checked in the cache once).
  const fs::path weights = weightsFile(options.checkpoint, loaded, run_dir, &report);
  if (weights.empty()) {
    return report.fail("no_checkpoint",
                       "no weights to export: " + weightsSearched(options.spec_path, run_dir),
                       kExitBadData);
  }
  // The model with its weights, loaded again for each backend of the parity check.
  const auto make_model = [&]() {
    return loadModel(modelOptionsFromSpec(s, loaded.resolved), weights,
                     s.skip_checkpoint_variables());
  };
  const fs::path out_dir =
      ex.output_dir.empty() ? defaultExportDir(run_dir, weights) : ex.output_dir;
  {
    std::error_code ec;
    if (fs::exists(out_dir, ec)) {
      return report.fail("output_exists",
                         "--output-dir: " + out_dir.string() +
                             " already exists; an export goes into a new folder (an earlier "
                             "export is never replaced)",
                         kExitUsage);
    }
  }
  report.write(train::startEvent("export", options.spec_path.string(),
                                 has_run_dir ? run_dir.string() : std::string(), "cpu", 1, 0, 0,
                                 MRCNN_VERSION));
  if (!data_log.str().empty()) report.log(data_log.str());
  try {
    WeightsReport w;
    net = loadModel(modelOptionsFromSpec(s, loaded.resolved), weights,
                    s.skip_checkpoint_variables(), &w);
    report.log("weights: " + weights.string() + " (" + w.kind + ", " + std::to_string(w.loaded) +
               " tensors)");
  } catch (const std::exception& e) {
    return report.fail("bad_checkpoint", std::string("checkpoint: ") + e.what(), kExitBadData);
  }
  std::vector<Category> categories;
  try {
    categories = categoryTable(namesJson(*data, report), net->numClasses(),
                               s.data_config().category_labels() == "category_id");
  } catch (const std::exception& e) {
    return report.fail("bad_dataset", std::string("categories: ") + e.what(), kExitBadData);
  }
  net->eval();

  exporter::OnnxExportOptions onnx_options = onnxExportOptions(s, loaded.resolved, categories);
  const InputOptions input = inputOptionsFromSpec(s, loaded.resolved);
  onnx_options.opset = ex.opset;
  onnx_options.metadata.insert(onnx_options.metadata.begin(), {{"spec", options.spec_path.string()},
                                                               {"weights", weights.string()}});

  const auto started = std::chrono::steady_clock::now();
  exporter::OnnxModel onnx;
  try {
    onnx = exporter::exportOnnx(*net, onnx_options);
  } catch (const std::invalid_argument& e) {
    return report.fail("bad_export", e.what(), kExitUsage);
  } catch (const std::exception& e) {
    return report.fail(e, "export_failed", "", kExitFailed);
  }
  const exporter::TorchvisionCompat tv = exporter::torchvisionCompat(*net, input.resize);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  report.log("model.onnx: " + std::to_string(onnx.nodes) + " nodes, " +
             io::byteSize(static_cast<uint64_t>(onnx.weight_bytes)) + " of weights, opset " +
             std::to_string(ex.opset) + "; passes the ONNX checker and shape inference");
  report.log(tv.note);

  try {
    std::error_code ec;
    fs::create_directories(out_dir.parent_path(), ec);
    io::StagingDir staging(out_dir);
    const fs::path dir = staging.path();
    io::requireFreeSpace(dir / "model.onnx", onnx.bytes.size() * (tv.compatible ? 2 : 1));
    io::writeFileAtomic(dir / "model.onnx", onnx.bytes, {.durable = true});
    if (tv.compatible) model::writeStateDict(tv.state, dir / "model.pth");
    io::writeFileAtomic(dir / "labels.txt", labelsText(categories));
    if (ex.gen_ds_config) {
      io::writeFileAtomic(dir / "nvinfer_config.txt",
                          exporter::deepStreamConfig(onnx_options, categories.size(),
                                                     2 * net->roiHeads()->options().mask_roi_size));
    }
    std::optional<Int8Result> int8;
    if (ex.data_type == "int8") {
      Int8Request request;
      request.fp32_bytes = onnx.bytes;
      request.dir = dir;
      request.image_limit = ex.cal_images;
      request.cache_file = ex.cal_cache_file;
      request.spec = options.spec_path.string();
      request.weights = weights.string();
      request.policy = exporter::defaultInt8Policy();
      request.policy.range = ex.cal_range == "minmax" ? exporter::RangeChoice::kMinMax
                                                      : exporter::RangeChoice::kPercentile;
      request.choose_range = ex.cal_range == "auto";
      request.percentile = ex.cal_percentile;
      request.policy.bias_correction = ex.bias_correction;
      try {
        request.images = calibrationImages(ex, *data);
        int8 = exportInt8(request, report);
        // The export's own cache is named where it will be, not in the staging folder.
        if (int8->cache.parent_path() == dir) int8->cache = out_dir / int8->cache.filename();
      } catch (const Int8Refused& e) {
        return report.fail(e.code(), e.what(), kExitBadData);
      }
      io::requireFreeSpace(dir / "model.int8.onnx", int8->model.bytes.size());
      io::writeFileAtomic(dir / "model.int8.onnx", int8->model.bytes, {.durable = true});
      report.log("model.int8.onnx: " + std::to_string(int8->model.nodes) + " nodes, " +
                 io::byteSize(static_cast<uint64_t>(int8->model.weight_bytes)) +
                 " of weights; passes the ONNX checker and shape inference");
    }
    const exporter::ParityTolerance tolerance;
    // The spec's bf16 gets its own rows where this CPU runs it as inference would: a CPU that
    // only emulates bf16 runs fp32 (precisionFromSpec), and timing the emulation took minutes.
    std::string no_precision;
    const std::optional<Precision> precision = precisionFromSpec(s, c10::Device(c10::kCPU), &no_precision);
    const bool bf16 = precision && precision->autocast && precision->dtype == at::kBFloat16;
    if (precision && !precision->fallback.empty()) {
      report.log("parity: no bf16 rows; " + precision->fallback);
    }
    ExportParity parity;
    try {
      parity = measureExportParity(parityInputs(ex, loaded, *data, categories, report), make_model,
                                   input, dir / "model.onnx", bf16, tolerance, report,
                                   int8 ? dir / "model.int8.onnx" : fs::path());
    } catch (const io::DiskFullError&) {
      throw;
    } catch (const std::exception& e) {
      return report.fail("export_parity_failed",
                         "the exported model could not be checked: " + std::string(e.what()),
                         kExitFailed);
    }
    if (!parity.skipped.empty()) report.warn("no_parity_check", parity.skipped);
    io::writeFileAtomic(dir / "export_report.json",
                        reportJson(onnx, tv, weights, ex, ex.gen_ds_config, parity, tolerance, int8));
    staging.moveTo(out_dir);
    if (parity.skipped.empty() && !parity.unchecked.empty()) {
      return report.fail("export_parity_unchecked",
                         out_dir.string() + ": the export's parity could not be checked: " +
                             parity.unchecked +
                             "; export a trained checkpoint, or give --images with objects",
                         kExitFailed);
    }
    if (parity.skipped.empty() && !parity.passed) {
      return report.fail("export_parity_failed",
                         out_dir.string() +
                             ": the exported model does not give the engine's "
                             "detections (" +
                             std::to_string(parity.agreed) + " of " +
                             std::to_string(parity.reference) + " agree); see export_report.json",
                         kExitFailed);
    }
  } catch (const std::exception& e) {
    return report.fail(e, "write_failed", "--output-dir: ", kExitBadData);
  }
  char took[64];
  std::snprintf(took, sizeof took, "%.1f s (the ONNX graph %.1f s)", report.elapsed(), seconds);
  report.write(train::doneEvent(
      "ok",
      "exported " + weights.filename().string() + " in " + took + " into " + out_dir.string(),
      report.elapsed()));
  return kExitOk;
}

}  // namespace

int runExport(const TaskOptions& options, const ExportOptions& ex, std::ostream& out,
              std::ostream& err) {
  const auto entry = TaskEntry("export").runDirEvents(RunDirEvents::IfExists);
  return runTask(entry, options, out, err, [&](TaskContext& c) {
    return exportModel(options, ex, c.spec(), c.run_dir, c.has_run_dir, c.report);
  });
}

}  // namespace mrcnn::engine
