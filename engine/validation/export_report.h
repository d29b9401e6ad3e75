// What an export proves about itself (export_report.json): the exported model run by
// OpenVINO's runtime beside the engine's own LibTorch inference on the same image files, both
// in fp32 — per image the detections' counts, the largest box and score differences, the
// smallest mask IoU — and, when the images have annotations, COCO bbox/segm mAP of both, also
// in bf16 when the spec asks for it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "io/json_writer.h"
#include "eval/evaluator.h"
#include "engine/export/detection_parity.h"
#include "engine/inference/image_input.h"
#include "engine/model/mask_rcnn.h"
#include "engine/events/task_report.h"

namespace mrcnn::engine {

struct ParityInputs {
  std::vector<std::filesystem::path> files;
  std::filesystem::path root;  // the files' folder: their names in the report are relative to it
  std::shared_ptr<const dataset::CocoDataset> ground_truth;  // null: no mAP
  std::map<std::string, int64_t> image_ids;                  // relative name -> image id
  std::vector<int64_t> category_ids;                         // by label, index 0 unused
  bool with_masks = true;
};

struct BackendMeasure {
  std::string backend;  // "libtorch", "openvino"
  std::string description;
  std::string precision;
  double seconds = 0;
  std::optional<eval::EvaluationReport> report;
};

// An int8 export beside the fp32 one: both run by OpenVINO on the same images, the int8
// detections compared with the fp32 ones under kInt8Tolerance.
struct Int8Parity {
  std::vector<exporter::ImageParity> images;
  int64_t reference = 0, agreed = 0;
  BackendMeasure fp32, int8;
};

// What "agrees" means for int8: the box within 5% of its size, the score within 0.05, the
// mask IoU at least 0.8. Reported, not a pass mark: the share is the export's own statement.
inline constexpr exporter::ParityTolerance kInt8Tolerance{0.05, 0.05, 0.8, 0.0};

struct ExportParity {
  std::string skipped;  // why nothing ran (no images); empty when it ran
  std::vector<exporter::ImageParity> images;
  int64_t reference = 0, agreed = 0;
  // Checked on at least one reference detection and within tolerance. With no reference
  // detection at all nothing was compared: not passed, and `unchecked` says why.
  bool passed = false;
  std::string unchecked;
  std::vector<BackendMeasure> measures;
  std::optional<Int8Parity> int8;
};

// `make_model`: the model with its weights (a new one each call). `bf16`: also measure mAP in
// bf16 (the spec's use_amp with amp_dtype bf16). `int8_onnx` (or empty): the int8 export,
// measured against the fp32 one. Progress goes to `report` as log events.
ExportParity measureExportParity(const ParityInputs& inputs,
                                 const std::function<model::MaskRCNN()>& make_model,
                                 const InputOptions& input, const std::filesystem::path& onnx,
                                 bool bf16, const exporter::ParityTolerance& tolerance,
                                 TaskReport& report,
                                 const std::filesystem::path& int8_onnx = {});

// The "parity" object of export_report.json.
void writeParityJson(io::JsonWriter& json, const ExportParity& parity,
                     const exporter::ParityTolerance& tolerance);

// The members of the "int8" object that compare it with fp32: "agreement", "runs" and
// "ap_delta" (int8 minus fp32, when the images have annotations).
void writeInt8ParityJson(io::JsonWriter& json, const Int8Parity& parity);

}  // namespace mrcnn::engine
