// The tasks mrcnn-engine runs. Each writes its report to `out`, problems to `err`, and
// returns an exit code of engine/exit_codes.h.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/harness/task_harness.h"
#include "engine/inference/tile_options.h"
#include "engine/prune/prune_rules.h"

namespace mrcnn::engine {

// Prints the resolved spec (every default filled in) or every error of it.
int runValidate(const TaskOptions& options, std::ostream& out, std::ostream& err);

// Prepares a training run: validates the spec, picks the device, creates the run
// directory with the spec as run, and makes the data ready (generating the embedded
// shapes dataset when the spec asks for it).
int runTrain(const TaskOptions& options, std::ostream& out, std::ostream& err);

struct InferenceOptions {
  // An image file or a folder of images; empty: the spec's validation images
  // (data_config.val_image_dir, or the shapes dataset's generated val split).
  std::filesystem::path images;
  // A COCO json whose images (under `images`, a folder) are the input, each result with the
  // json's image id: a data set's split run as it is listed. Empty: the files of `images`.
  std::filesystem::path image_list;
  bool overlays = true;  // an overlay image per input (false: results.json only)
  // Model-assisted labelling: the detections kept (a class's --thresholds threshold, else
  // overlay_threshold) also as a COCO annotation file, masks as polygons, each with its score.
  std::filesystem::path out_annotations;
  std::filesystem::path out;       // empty: <run dir>/inference
  double overlay_threshold = 0.5;  // detections drawn on the overlays score at least this
  // Per-class score thresholds (eval/class_thresholds.h): detections of a class listed there
  // scoring below its threshold are dropped from results and overlays; the rest of a listed
  // class are all drawn, each result carries its class's threshold. Empty: none.
  std::filesystem::path thresholds;
  // What runs the model: "libtorch" (the engine's model) or "openvino" (OpenVINO's runtime
  // on the exported ONNX: `onnx`, or the weights exported on the fly into
  // <run dir>/openvino/<weights stem>.onnx).
  std::string backend = "libtorch";
  std::filesystem::path onnx;
  // tile.size > 0: each image in tiles, the detections merged (engine/inference/tiling.h).
  TileOptions tile;
  // Throughput mode (--streams N, either backend; LibTorch on the CPU): N images in flight,
  // read 4N at a time.
  int streams = 1;
  // The inference task: events (start, log, progress per batch, warning per unreadable image,
  // done) on stdout and, when the run directory exists or is where the outputs go, in its
  // events.jsonl and log.txt. False when another task runs it (the train task's overlays):
  // lines of text to `out`, warnings to `err`.
  bool events = false;
};

// Runs the spec's model with its weights (--checkpoint, else the run directory's last
// checkpoint, else the spec's checkpoint) on images (by default the spec's validation images):
// writes results.json (COCO results with
// file names and RLE masks), categories.json and an overlay image per input. An image that
// cannot be read is skipped with a warning (exit code kExitBadData when none could be).
int runInference(const TaskOptions& options, const InferenceOptions& inference, std::ostream& out,
                 std::ostream& err);

// Evaluates the spec's model with its weights (as runInference picks them) on the spec's
// validation set (its first eval_samples images): events on stdout and in <run dir>/
// events.jsonl (start, log, warning, eval with bbox and segm, done), the metrics in
// <run dir>/eval/<checkpoint stem>.json.
// In the spec's precision; with backend "openvino" the exported model (`onnx`, or the weights
// exported on the fly) runs through OpenVINO on the validation images' files.
// With tile.size > 0, the backend (either) runs on tiles of the validation images' files and
// the metrics go to eval/<checkpoint>[.openvino].tiled.json.
struct EvaluateOptions {
  std::string backend = "libtorch";
  std::filesystem::path onnx;
  TileOptions tile;
};
int runEvaluate(const TaskOptions& options, const EvaluateOptions& evaluate, std::ostream& out,
                std::ostream& err);

struct EvaluateFilesOptions {
  std::filesystem::path annotations;  // COCO instances json (ground truth)
  std::filesystem::path results;      // COCO results json
  std::string iou_type;               // bbox, segm, both; empty: both when results have masks
  std::filesystem::path metrics_out;  // optional
};

// Evaluates a results file against annotations (no model): prints pycocotools' summary and
// optionally writes the metrics json.
int runEvaluateFiles(const EvaluateFilesOptions& options, std::ostream& out, std::ostream& err);

// TAO's dataset_convert parameters as the command line gives them (empty: the default).
struct DatasetConvertOptions {
  std::filesystem::path image_dir;
  std::filesystem::path annotations;  // COCO instances json
  std::filesystem::path output_dir;
  std::string tag;           // default: the annotation file's name without extension
  std::string num_shards;    // default 256, capped at the number of images
  std::string include_mask;  // true (default) or false
};

// Converts a COCO dataset into shard files with TAO's <tag>_warnings.json and a report of
// every problem (dataset/convert/dataset_convert.h); prints a summary per kind of problem.
int runDatasetConvert(const DatasetConvertOptions& options, std::ostream& out, std::ostream& err);

// dataset_convert from a spec: its training set (train_image_dir + train_json_file) and its
// validation set (val_image_dir + val_json_file), or the shapes dataset's generated splits,
// converted as runDatasetConvert does into <run dir>/shards with the tags "train" and "val".
// Events on stdout and in <run dir>/events.jsonl: start, a log per split (its summary, the
// warnings and report files), a warning per kind of problem, done naming the output folder.
int runDatasetConvertFromSpec(const TaskOptions& options, std::ostream& out, std::ostream& err);

// The dataset check on annotation files alone: tables to `out`, stats.json into output_dir
// (default: the current folder).
struct DatasetStatsOptions {
  std::vector<std::filesystem::path> annotations;
  std::filesystem::path output_dir;
};
int runDatasetStatsFiles(const DatasetStatsOptions& options, std::ostream& out, std::ostream& err);
// The check on a spec's train and val files with its anchors, resize and classes: events
// (start, the tables as a log, a warning per problem, done) and <run dir>/stats.json.
int runDatasetStats(const TaskOptions& options, std::ostream& out, std::ostream& err);

// dataset_import's command line (empty: the default).
struct DatasetImportOptions {
  std::string format;  // labelme, voc, cvat, yolo, coco; empty: detected from the input
  std::filesystem::path input;
  std::filesystem::path output_dir;  // a new or empty folder
  std::string split;                 // "train=0.8,val=0.2"; empty: one split, "train"
  std::string seed;
  std::filesystem::path labels;  // a label a line (LabelMe's labels.txt): category order
  bool copy_images = false;
};

// Imports a data set in another tool's format (dataset/import/import.h) into
// output_dir/annotations/instances_<split>.json and output_dir/import_report.json. Events on
// stdout: start, progress, a warning per kind of problem, the summary, done. Input that cannot
// be imported writes nothing and exits kExitBadData; a non-empty output folder too.
int runDatasetImport(const DatasetImportOptions& options, std::ostream& out, std::ostream& err);

// The label check's command line (review/mistake_finder.h).
struct LabelCheckOptions {
  std::filesystem::path annotations;  // file mode: the annotations; spec mode: instead of a split
  std::filesystem::path results;      // file mode: COCO results on those annotations' images
  std::filesystem::path image_dir;    // spec mode with --annotations: where its images are
  std::string split = "val";          // spec mode: train or val
  std::filesystem::path output_dir;   // empty: <run dir>/label_check, or beside the annotations
  double score_threshold = 0.5;       // a detection this sure is evidence on its own
  size_t top = 20;                    // entries printed
  // Spec mode: out-of-sample detections from `folds` models (0: the spec's model once), each
  // trained `fold_steps` steps (0: the spec's total_steps) on the other folds.
  uint32_t folds = 0;
  uint64_t fold_steps = 0;
};

// Likely label mistakes of annotations from a results file (no model): mistakes.json and
// events (events.jsonl) into output_dir, the first `top` printed.
int runLabelCheckFiles(const LabelCheckOptions& options, std::ostream& out, std::ostream& err);
// The same with the spec's model and weights (as runInference picks them) run first on the
// split's images (or --annotations with --image-dir); its results in <output dir>/inference.
int runLabelCheck(const TaskOptions& options, const LabelCheckOptions& check, std::ostream& out,
                  std::ostream& err);

struct BenchmarkOptions {
  std::string mode = "train";  // train or inference
  uint64_t steps = 20;         // timed steps (after a few warm-up steps)
  bool profile = false;  // one more step under the operator profiler (engine/runtime/op_profile.h)
  // Not empty: one more step counting the host's waits for the GPU and where they come from
  // (engine/runtime/sync_counter.h), written to this file; a CUDA device only.
  std::filesystem::path count_syncs;
};

// The fake-data benchmark: synthetic batches of the spec's image size and model, training
// steps (with the gradient all-reduce of a data-parallel job) or inference; reports the global
// images/s and step-time percentiles as events. No data, no run directory.
int runBenchmark(const TaskOptions& options, const BenchmarkOptions& bench, std::ostream& out,
                 std::ostream& err);

struct ExportOptions {
  std::filesystem::path output_dir;  // empty: <run dir>/export/<weights stem>[-N]
  int opset = 17;
  bool gen_ds_config = false;  // also a DeepStream nvinfer config (nvinfer_config.txt)
  // The images of the parity check (a file or folder); empty: the spec's validation images
  // (its first eval_samples), with their annotations for mAP.
  std::filesystem::path images;
  // int8: model.int8.onnx beside model.onnx (TAO's --data_type, --cal_image_dir, --batches,
  // --cal_cache_file), calibrated on the first cal_images images of cal_image_dir (empty:
  // the spec's validation images); the cache is reused when it exists and refused when it
  // was made for another model.
  std::string data_type = "fp32";
  std::filesystem::path cal_image_dir;
  int64_t cal_images = 10;
  std::filesystem::path cal_cache_file;
  std::string cal_range = "auto";  // "percentile", "minmax", or "auto": the export measures both
  double cal_percentile = 99.99;
  // Each quantised layer's bias corrected by its int8 weights' mean error on the calibration
  // images (engine/export/bias_correction.h); --bias_correction off keeps the biases.
  bool bias_correction = true;
};

// Exports the spec's model with its weights (as runInference picks them) into a new folder:
// model.onnx (engine/export/onnx_export.h), model.pth when the model is torchvision's
// maskrcnn_resnet50_fpn, labels.txt, the DeepStream config when asked, export_report.json
// with the exported model run by OpenVINO beside LibTorch (tasks/export_report.h). An
// existing --output-dir is refused (kExitUsage); the folder appears whole or not at all. An
// export whose parity fails is kept for inspection and the task exits kExitFailed.
int runExport(const TaskOptions& options, const ExportOptions& ex, std::ostream& out,
              std::ostream& err);

struct PruneTaskOptions {
  prune::PruneOptions rules;         // TAO's -pth, -nm, -eq, -pg, -nf, -el
  std::filesystem::path output_dir;  // a new or empty folder
};

// Prunes the spec's model with its weights (as runInference picks them) by TAO's rules
// (engine/prune) into output_dir: model.pt (the pruned tensors under "model.", meta.json with
// the pruned architecture) and status.json (pruning_ratio = parameters after / before,
// param_count, size, GFLOPs before and after, every layer's kept filters). Events: start, the
// per-layer table as a log, done with the ratio. A non-empty output_dir is refused
// (kExitUsage); the folder appears whole or not at all.
int runPrune(const TaskOptions& options, const PruneTaskOptions& prune_options, std::ostream& out,
             std::ostream& err);

}  // namespace mrcnn::engine
