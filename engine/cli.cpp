#include "engine/cli.h"

#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "engine/cli_args.h"
#include "engine/exit_codes.h"
#include "engine/file_cli.h"
#include "engine/file_tasks.h"
#include "engine/runtime/device.h"
#include "engine/tasks/tasks.h"

namespace mrcnn::engine {
namespace {

constexpr const char* kModelTaskUsage =
    "usage: mrcnn-engine --spec SPEC [--task TASK] [--run-dir DIR] [--set path.to.field=value]...\n"
    "       mrcnn-engine --spec SPEC --task inference [--images FILE_OR_DIR] [--out DIR]\n"
    "                    [--checkpoint FILE] [--overlay-threshold SCORE]\n"
    "                    [--thresholds METRICS_OR_THRESHOLDS.json]\n"
    "                    [--backend libtorch|openvino] [--onnx MODEL.onnx]\n"
    "                    [--tile SIZE [--tile-overlap F] [--tile-full] [--tile-merge nmm|nms]\n"
    "                    [--tile-match-threshold T]] [--streams N]\n"
    "                    [--out-annotations DRAFT.json] [--no-overlays]\n"
    "                    (default images: the spec's validation images; --image-dir is\n"
    "                    --images; DRAFT.json: the detections as COCO annotations to correct;\n"
    "                    --streams N: throughput mode, N images in flight; without --tile,\n"
    "                    the spec's data_config.tile_size decides, --tile 0: whole images)\n"
    "       mrcnn-engine --spec SPEC --task evaluate [--run-dir DIR] [--checkpoint FILE]\n"
    "                    [--backend libtorch|openvino] [--onnx MODEL.onnx] [--tile SIZE ...]\n"
    "       mrcnn-engine --task dataset_convert --image-dir DIR --annotations FILE.json\n"
    "                    --output-dir DIR [--tag TAG] [--num-shards N]\n"
    "                    [--include-mask true|false]\n"
    "       mrcnn-engine --spec SPEC --task dataset_stats [--run-dir DIR]\n"
    "       mrcnn-engine --spec SPEC --task dataset_convert [--run-dir DIR]\n"
    "                    (the spec's train and val sets into RUN_DIR/shards)\n"
    "       mrcnn-engine --spec SPEC --task export [--checkpoint FILE] [--output-dir DIR]\n"
    "                    [--opset 16|17] [--gen-ds-config] [--images FILE_OR_DIR]\n"
    "                    [--data_type fp32|int8] [--cal_image_dir DIR] [--batches N]\n"
    "                    [--cal_cache_file FILE] [--cal_range auto|percentile|minmax]\n"
    "                    [--cal_percentile P] [--bias_correction on|off]\n"
    "                    (model.onnx, model.pth, labels.txt, export_report.json into a new\n"
    "                    folder, default RUN_DIR/export/<checkpoint>; parity checked with\n"
    "                    OpenVINO on --images or the spec's validation images; int8 adds\n"
    "                    model.int8.onnx calibrated on N images of DIR, default 10 of the\n"
    "                    spec's validation images, and its accuracy cost to the report)\n"
    "       mrcnn-engine --spec SPEC --task prune --output-dir DIR [--checkpoint FILE]\n"
    "                    [--pruning-threshold T] [--normalizer max|L2]\n"
    "                    [--equalization-criterion union|intersection|arithmetic_mean|\n"
    "                    geometric_mean] [--pruning-granularity N] [--min-num-filters N]\n"
    "                    [--excluded-layers a,b,...]   (TAO's -pth -nm -eq -pg -nf -el;\n"
    "                    model.pt and status.json into a new or empty DIR)\n"
    "       mrcnn-engine --spec SPEC --task label_check [--split train|val]\n"
    "                    [--annotations GT.json --image-dir DIR] [--checkpoint FILE]\n"
    "                    [--folds K [--fold-steps N]]   (K models, each trained on the\n"
    "                    other folds: out-of-sample detections; the train split by default)\n"
    "                    [--output-dir DIR] [--score-threshold S] [--top N]\n"
    "                    (likely label mistakes from a model's detections: mistakes.json,\n"
    "                    default DIR: RUN_DIR/label_check)\n"
    "       mrcnn-engine --spec SPEC --task benchmark [--mode train|inference] [--steps N]\n"
    "                    [--profile] [--count-syncs FILE.json]\n"
    "                    (synthetic batches of the spec's image size and model; --profile: one\n"
    "                    more step under LibTorch's profiler, its busiest operators and kernels;\n"
    "                    --count-syncs: one more step counting the host's waits for the GPU,\n"
    "                    their call stacks into FILE.json)\n";
// After the tasks on files.
constexpr const char* kUsageEnd =
    "the tasks on files also run in mrcnn-data, which starts without LibTorch\n"
    "data-parallel: started by torchrun, SLURM or mrcnn-workbench --nproc-per-node, the\n"
    "engine joins their process group (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)\n"
    "tasks: train (default), validate, evaluate, inference, dataset_convert, dataset_import,\n"
    "       dataset_stats, label_check, benchmark, export, prune\n";

// The whole usage text.
std::string usage() {
  return kModelTaskUsage + fileTaskUsage("mrcnn-engine") + kUsageEnd;
}

// Tiled inference's options (size 0 without --tile); nullopt after saying what is wrong.
std::optional<TileOptions> tileOptions(const std::map<std::string, std::string>& values,
                                       std::ostream& err) {
  const auto has = [&](const char* key) { return values.count(key) > 0; };
  const auto get = [&](const char* key) { return has(key) ? values.at(key) : std::string(); };
  // Without tiles (no --tile, or --tile 0), a tile option is a mistake worth naming.
  const auto untiled = [&](const char* why) -> std::optional<TileOptions> {
    for (const char* key : {"--tile-overlap", "--tile-full", "--tile-merge",
                            "--tile-match-threshold"}) {
      if (has(key)) {
        err << "mrcnn-engine: " << key << why << "\n";
        return std::nullopt;
      }
    }
    TileOptions whole;
    whole.given = has("--tile");
    return whole;
  };
  if (!has("--tile")) return untiled(" needs --tile SIZE");
  const auto number = [&](const char* key, double& v) {
    if (!has(key)) return true;
    try {
      size_t used = 0;
      v = std::stod(get(key), &used);
      if (used == get(key).size()) return true;
    } catch (const std::exception&) {
    }
    err << "mrcnn-engine: " << key << " " << get(key) << ": not a number\n";
    return false;
  };
  const auto size = wholeNumber(get("--tile"), 0);
  if (!size) {
    err << "mrcnn-engine: --tile " << get("--tile")
        << ": a tile's side in pixels (0: whole images, whatever the spec says)\n";
    return std::nullopt;
  }
  // --tile 0: whole images, even where the spec tiles them.
  if (*size == 0) return untiled(" with --tile 0: whole images have no tiles");
  TileOptions tile;
  tile.size = static_cast<int>(*size);
  tile.given = true;
  tile.full_image = has("--tile-full");
  if (!number("--tile-overlap", tile.overlap) ||
      !number("--tile-match-threshold", tile.match_threshold)) {
    return std::nullopt;
  }
  try {
    if (has("--tile-merge")) tile.merge = parseTileMerge(get("--tile-merge"));
    checkTileOptions(tile);
  } catch (const std::invalid_argument& e) {
    err << "mrcnn-engine: " << e.what() << "\n";
    return std::nullopt;
  }
  return tile;
}

// The export task's options; nullopt after saying what is wrong.
std::optional<ExportOptions> exportOptions(const std::map<std::string, std::string>& values,
                                           std::ostream& err) {
  const auto has = [&](const char* key) { return values.count(key) > 0; };
  const auto get = [&](const char* key) { return has(key) ? values.at(key) : std::string(); };
  ExportOptions ex;
  ex.output_dir = get("--output-dir");
  ex.gen_ds_config = has("--gen-ds-config");
  ex.images = get("--images");
  if (has("--opset")) {
    const std::string text = get("--opset");
    if (text != "16" && text != "17") {
      err << "mrcnn-engine: --opset " << text
          << ": the export writes opset 16 or 17 (RoiAlign's half-pixel modes need 16)\n";
      return std::nullopt;
    }
    ex.opset = std::stoi(text);
  }
  if (has("--data_type")) {
    ex.data_type = get("--data_type");
    if (ex.data_type != "fp32" && ex.data_type != "int8") {
      err << "mrcnn-engine: --data_type " << ex.data_type
          << ": the export writes fp32 or int8 (bf16 is a runtime choice: the spec's amp_dtype)\n";
      return std::nullopt;
    }
  }
  const bool int8 = ex.data_type == "int8";
  for (const char* key : {"--cal_image_dir", "--batches", "--cal_cache_file", "--cal_range",
                          "--cal_percentile", "--bias_correction"}) {
    if (has(key) && !int8) {
      err << "mrcnn-engine: " << key << " calibrates an int8 export: give --data_type int8\n";
      return std::nullopt;
    }
  }
  ex.cal_image_dir = get("--cal_image_dir");
  ex.cal_cache_file = get("--cal_cache_file");
  if (has("--batches")) {
    const auto n = wholeNumber(get("--batches"), 1);
    if (!n) {
      err << "mrcnn-engine: --batches " << get("--batches")
          << ": the number of calibration images, a whole number from 1\n";
      return std::nullopt;
    }
    ex.cal_images = *n;
  }
  if (has("--cal_range")) {
    ex.cal_range = get("--cal_range");
    if (ex.cal_range != "auto" && ex.cal_range != "percentile" && ex.cal_range != "minmax") {
      err << "mrcnn-engine: --cal_range " << ex.cal_range << ": use auto, percentile or minmax\n";
      return std::nullopt;
    }
  }
  if (has("--bias_correction")) {
    if (get("--bias_correction") != "on" && get("--bias_correction") != "off") {
      err << "mrcnn-engine: --bias_correction " << get("--bias_correction") << ": use on or off\n";
      return std::nullopt;
    }
    ex.bias_correction = get("--bias_correction") == "on";
  }
  if (has("--cal_percentile")) {
    try {
      size_t used = 0;
      ex.cal_percentile = std::stod(get("--cal_percentile"), &used);
      if (used != get("--cal_percentile").size() || !(ex.cal_percentile > 90) ||
          ex.cal_percentile > 100)
        throw std::invalid_argument("range");
    } catch (const std::exception&) {
      err << "mrcnn-engine: --cal_percentile " << get("--cal_percentile")
          << ": a number in (90, 100]\n";
      return std::nullopt;
    }
  }
  return ex;
}

// The prune task's options (TAO's names and defaults); nullopt after saying what is wrong.
std::optional<PruneTaskOptions> pruneOptions(const std::map<std::string, std::string>& values,
                                             std::ostream& err) {
  const auto has = [&](const char* key) { return values.count(key) > 0; };
  const auto get = [&](const char* key) { return values.at(key); };
  PruneTaskOptions o;
  if (!has("--output-dir")) {
    err << "mrcnn-engine: --task prune needs --output-dir DIR (a new or empty folder)\n";
    return std::nullopt;
  }
  o.output_dir = get("--output-dir");
  if (has("--pruning-threshold")) {
    try {
      size_t used = 0;
      o.rules.threshold = std::stod(get("--pruning-threshold"), &used);
      if (used != get("--pruning-threshold").size() || !(o.rules.threshold >= 0) ||
          o.rules.threshold > 1)
        throw std::invalid_argument("range");
    } catch (const std::exception&) {
      err << "mrcnn-engine: --pruning-threshold " << get("--pruning-threshold")
          << ": a number in [0, 1] (scores are normalised filter norms)\n";
      return std::nullopt;
    }
  }
  if (has("--normalizer")) {
    const auto n = prune::parseNormalizer(get("--normalizer"));
    if (!n) {
      err << "mrcnn-engine: --normalizer " << get("--normalizer") << ": use max or L2\n";
      return std::nullopt;
    }
    o.rules.normalizer = *n;
  }
  if (has("--equalization-criterion")) {
    const auto e = prune::parseEqualization(get("--equalization-criterion"));
    if (!e) {
      err << "mrcnn-engine: --equalization-criterion " << get("--equalization-criterion")
          << ": use union, intersection, arithmetic_mean or geometric_mean\n";
      return std::nullopt;
    }
    o.rules.equalization = *e;
  }
  for (const auto& [key, target, min] :
       {std::tuple{"--pruning-granularity", &o.rules.granularity, int64_t{1}},
        std::tuple{"--min-num-filters", &o.rules.min_filters, int64_t{1}}}) {
    if (!has(key)) continue;
    const std::optional<int64_t> v = wholeNumber(get(key), min);
    if (!v) {
      err << "mrcnn-engine: " << key << " " << get(key) << ": a whole number from " << min << '\n';
      return std::nullopt;
    }
    *target = *v;
  }
  if (has("--excluded-layers")) {
    std::istringstream names(get("--excluded-layers"));
    for (std::string name; std::getline(names, name, ',');)
      if (!name.empty()) o.rules.excluded_layers.push_back(name);
  }
  return o;
}

}  // namespace

int engineMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string usage_text = usage();
  const std::optional<CommandLine> parsed = parseCommandLine(args, err, usage_text.c_str());
  if (!parsed) return kExitUsage;
  const CommandLine& c = *parsed;
  if (c.help) {
    out << usage_text;
    return kExitOk;
  }
  if (c.version) {
    const RuntimeInfo runtime = runtimeInfo();
    out << "mrcnn-engine " << MRCNN_VERSION << '\n'
        << "LibTorch " << runtime.torch_version
        << ", CUDA build: " << (runtime.cuda_built ? "yes" : "no")
        << ", GPUs available: " << runtime.cuda_devices
        << ", CPU threads: " << runtime.cpu_threads << '\n';
    return kExitOk;
  }
  const std::string task = c.task();
  const auto& values = c.values;
  const auto get = [&](const char* key) { return c.get(key); };
  if (task == "evaluate" && (c.has("--annotations") || c.has("--results")) && c.has("--spec")) {
    err << "mrcnn-engine: evaluate takes either --spec (a checkpoint on the spec's validation "
           "set) or --annotations and --results (a results file), not both\n"
        << usage_text;
    return kExitUsage;
  }
  // The tasks on files (engine/file_tasks.h), as mrcnn-data runs them.
  if (isFileTask(task, c.has("--spec"))) return runFileTask(c, out, err);
  std::optional<LabelCheckOptions> label_check;
  if (task == "label_check") {
    label_check = labelCheckOptions(c, err);
    if (!label_check) return kExitUsage;
  }

  if (task == "dataset_convert" && values.count("--spec")) {
    for (const char* file_option : {"--image-dir", "--annotations", "--output-dir", "--tag",
                                    "--num-shards", "--include-mask"}) {
      if (values.count(file_option)) {
        err << "mrcnn-engine: dataset_convert takes either --spec (the spec's datasets into "
               "the run directory's shards/) or --image-dir, --annotations and --output-dir, "
               "not both ("
            << file_option << " was given with --spec)\n"
            << usage_text;
        return kExitUsage;
      }
    }
  }
  if (task == "dataset_convert" && !values.count("--spec")) {
    DatasetConvertOptions options;
    options.image_dir = get("--image-dir");
    options.annotations = get("--annotations");
    options.output_dir = get("--output-dir");
    options.tag = get("--tag");
    options.num_shards = get("--num-shards");
    options.include_mask = get("--include-mask");
    return runDatasetConvert(options, out, err);
  }

  TaskOptions options;
  options.task = task;
  options.spec_path = get("--spec");
  options.run_dir = get("--run-dir");
  options.overrides = c.overrides;
  options.checkpoint = get("--checkpoint");
  options.test_faults = testFaultsFromEnvironment();
  if (options.spec_path.empty()) {
    err << "mrcnn-engine: --spec is required for task " << options.task << '\n' << usage_text;
    return kExitUsage;
  }
  const std::optional<TileOptions> tile = tileOptions(values, err);
  if (!tile) return kExitUsage;
  if (tile->given && task != "evaluate" && task != "inference") {
    err << "mrcnn-engine: --tile tiles the images of inference and evaluate\n";
    return kExitUsage;
  }
  int streams = 1;
  if (values.count("--streams")) {
    const auto n = wholeNumber(get("--streams"), 1);
    if (!n || *n > 64) {
      err << "mrcnn-engine: --streams " << get("--streams")
          << ": the images in flight at once, a whole number from 1 to 64\n";
      return kExitUsage;
    }
    if (task != "inference") {
      err << "mrcnn-engine: --streams is inference's throughput mode (--task inference)\n";
      return kExitUsage;
    }
    streams = static_cast<int>(*n);
  }
  if (task == "validate") return runValidate(options, out, err);
  if (task == "dataset_stats") return runDatasetStats(options, out, err);
  if (task == "label_check") return runLabelCheck(options, *label_check, out, err);
  if (task == "train") return runTrain(options, out, err);
  // The backend of inference and evaluate (the model, or OpenVINO on an exported ONNX).
  const std::string backend = values.count("--backend") ? get("--backend") : "libtorch";
  if (backend != "libtorch" && backend != "openvino") {
    err << "mrcnn-engine: --backend " << backend << ": use libtorch or openvino\n";
    return kExitUsage;
  }
  if (values.count("--onnx") && backend != "openvino") {
    err << "mrcnn-engine: --onnx runs through OpenVINO: add --backend openvino\n";
    return kExitUsage;
  }
  if (task == "evaluate") return runEvaluate(options, {backend, get("--onnx"), *tile}, out, err);
  if (task == "dataset_convert") return runDatasetConvertFromSpec(options, out, err);
  if (task == "benchmark") {
    BenchmarkOptions bench;
    if (values.count("--mode")) bench.mode = get("--mode");
    if (bench.mode != "train" && bench.mode != "inference") {
      err << "mrcnn-engine: --mode " << bench.mode << ": use train or inference\n";
      return kExitUsage;
    }
    if (values.count("--steps")) {
      const std::string text = get("--steps");
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
          text.size() > 9 || std::stoul(text) == 0) {
        err << "mrcnn-engine: --steps " << text << ": a whole number from 1\n";
        return kExitUsage;
      }
      bench.steps = std::stoul(text);
    }
    bench.profile = values.count("--profile") > 0;
    bench.count_syncs = get("--count-syncs");
    return runBenchmark(options, bench, out, err);
  }
  if (task == "inference") {
    InferenceOptions inference;
    if (values.count("--images") && values.count("--image-dir")) {
      err << "mrcnn-engine: inference takes --images or --image-dir (the same), not both\n";
      return kExitUsage;
    }
    inference.images = values.count("--image-dir") ? get("--image-dir") : get("--images");
    inference.out_annotations = get("--out-annotations");
    inference.out = get("--out");
    inference.events = true;
    inference.backend = backend;
    inference.onnx = get("--onnx");
    inference.tile = *tile;
    inference.streams = streams;
    inference.thresholds = get("--thresholds");
    inference.overlays = values.count("--no-overlays") == 0;
    if (values.count("--overlay-threshold")) {
      try {
        size_t used = 0;
        inference.overlay_threshold = std::stod(get("--overlay-threshold"), &used);
        if (used != get("--overlay-threshold").size()) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        err << "mrcnn-engine: --overlay-threshold: not a number: \"" << get("--overlay-threshold")
            << "\"\n";
        return kExitUsage;
      }
    }
    return runInference(options, inference, out, err);
  }
  if (task == "export") {
    std::optional<ExportOptions> ex = exportOptions(values, err);
    if (!ex) return kExitUsage;
    return runExport(options, *ex, out, err);
  }
  if (task == "prune") {
    std::optional<PruneTaskOptions> prune = pruneOptions(values, err);
    if (!prune) return kExitUsage;
    return runPrune(options, *prune, out, err);
  }
  err << "mrcnn-engine: unknown task \"" << task << "\"\n" << usage_text;
  return kExitUsage;
}

}  // namespace mrcnn::engine
