#include "engine/setup/backend_setup.h"

#include "engine/exit_codes.h"
#include "engine/export/onnx_export.h"
#include "engine/inference/coco_results.h"
#include "engine/inference/libtorch_backend.h"
#include "engine/inference/openvino_backend.h"
#include "engine/inference/tiled_backend.h"
#include "engine/setup/model_config.h"
#include "engine/runtime/precision.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {

namespace fs = std::filesystem;

int makeBackend(const BackendRequest& inference, const spec::LoadedSpec& loaded,
                const fs::path& spec_path, const std::string& device, const fs::path& run_dir,
                model::MaskRCNN net, const std::vector<Category>& categories,
                const fs::path& weights, TaskReport& report,
                std::unique_ptr<InferenceBackend>& backend) {
  const spec::Experiment& s = loaded.spec;
  const c10::Device torch_device(device);
  std::string error;
  const std::optional<Precision> precision = precisionFromSpec(s, torch_device, &error);
  if (!precision) return report.fail("bad_spec", spec_path.string() + ": " + error, kExitBadSpec);
  if (!precision->fallback.empty()) report.log(precision->fallback);
  if (inference.backend == "libtorch") {
    if (inference.streams > 1 && !torch_device.is_cpu()) {
      return report.fail("bad_options",
                         "--streams " + std::to_string(inference.streams) +
                             ": throughput mode runs LibTorch on the CPU; on " + device +
                             " LibTorch batches the images instead (the spec's eval_batch_size)",
                         kExitUsage);
    }
    backend = makeLibTorchBackend(std::move(net), inputOptionsFromSpec(s, loaded.resolved),
                                  torch_device, *precision, inference.streams,
                                  s.use_cuda_graphs());
    if (inference.tile.size > 0) backend = makeTiledBackend(std::move(backend), inference.tile);
    return kExitOk;
  }
  if (!torch_device.is_cpu()) {
    report.log("the OpenVINO backend runs on the CPU (the spec's device " + device +
               " is for LibTorch)");
  }
  OpenVinoOptions ov;
  ov.onnx = inference.onnx;
  ov.bf16 = precision->autocast && precision->dtype == at::kBFloat16;
  ov.streams = inference.streams;
  for (const Category& c : categories)
    ov.category_ids.push_back(c.id);
  if (ov.onnx.empty()) {
    // The weights exported on the fly, replacing the previous one of the same weights.
    ov.onnx = run_dir / "openvino" / (weights.stem().string() + ".onnx");
    try {
      const exporter::OnnxModel onnx =
          exporter::exportOnnx(*net, onnxExportOptions(s, loaded.resolved, categories));
      std::error_code ec;
      fs::create_directories(ov.onnx.parent_path(), ec);
      io::writeFileAtomic(ov.onnx, onnx.bytes);
      report.log("exported " + weights.filename().string() + " to " + ov.onnx.string());
    } catch (const std::exception& e) {
      return report.fail(e, "export_failed", "exporting for OpenVINO: ", kExitFailed);
    }
  }
  try {
    backend = makeOpenVinoBackend(ov);
  } catch (const std::exception& e) {
    return report.fail("bad_model", e.what(), kExitBadData);
  }
  if (inference.tile.size > 0) backend = makeTiledBackend(std::move(backend), inference.tile);
  return kExitOk;
}

eval::EvaluationReport evaluateBackendRun(const BackendRun& run, const fs::path& root,
                                          const std::map<std::string, int64_t>& image_ids,
                                          const std::vector<int64_t>& category_ids,
                                          const dataset::CocoDataset& ground_truth,
                                          bool with_masks) {
  std::vector<int64_t> ids;
  std::vector<eval::Detection> detections;
  for (const BackendImage& image : run.images) {
    const auto found = image_ids.find(image.input.path.lexically_relative(root).generic_string());
    if (found == image_ids.end()) continue;
    ids.push_back(found->second);
    for (CocoInstance& ci : cocoInstances(image.detections, category_ids)) {
      eval::Detection d;
      d.image_id = found->second;
      d.category_id = ci.category_id;
      d.bbox = {ci.bbox[0], ci.bbox[1], ci.bbox[2], ci.bbox[3]};
      d.area = ci.bbox[2] * ci.bbox[3];
      d.score = ci.score;
      if (ci.mask) d.mask = std::move(*ci.mask);
      detections.push_back(std::move(d));
    }
  }
  if (ids.empty()) return {};
  const eval::CocoEvaluator evaluator(ground_truth, with_masks, ids);
  return evaluator.evaluate(std::move(detections));
}

}  // namespace mrcnn::engine
