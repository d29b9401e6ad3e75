#include "engine/cli.h"

#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "engine/exit_codes.h"
#include "engine/runtime/device.h"
#include "engine/tasks/tasks.h"

namespace mrcnn::engine {
namespace {

constexpr const char* kUsage =
    "usage: mrcnn-engine --spec SPEC [--task TASK] [--run-dir DIR] [--set path.to.field=value]...\n"
    "       mrcnn-engine --spec SPEC --task inference [--images FILE_OR_DIR] [--out DIR]\n"
    "                    [--checkpoint FILE] [--overlay-threshold SCORE]\n"
    "                    [--thresholds METRICS_OR_THRESHOLDS.json]\n"
    "                    [--backend libtorch|openvino] [--onnx MODEL.onnx]\n"
    "                    [--out-annotations DRAFT.json]\n"
    "                    (default images: the spec's validation images; --image-dir is\n"
    "                    --images; DRAFT.json: the detections as COCO annotations to correct)\n"
    "       mrcnn-engine --spec SPEC --task evaluate [--run-dir DIR] [--checkpoint FILE]\n"
    "                    [--backend libtorch|openvino] [--onnx MODEL.onnx]\n"
    "       mrcnn-engine --task evaluate --annotations GT.json --results DT.json\n"
    "                    [--iou-type bbox|segm|both] [--metrics-out METRICS.json]\n"
    "       mrcnn-engine --task dataset_convert --image-dir DIR --annotations FILE.json\n"
    "                    --output-dir DIR [--tag TAG] [--num-shards N]\n"
    "                    [--include-mask true|false]\n"
    "       mrcnn-engine --spec SPEC --task dataset_stats [--run-dir DIR]\n"
    "       mrcnn-engine --task dataset_stats --annotations F.json [--annotations G.json]\n"
    "                    [--output-dir DIR]   (the dataset check: tables, stats.json)\n"
    "       mrcnn-engine --spec SPEC --task dataset_convert [--run-dir DIR]\n"
    "                    (the spec's train and val sets into RUN_DIR/shards)\n"
    "       mrcnn-engine --spec SPEC --task export [--checkpoint FILE] [--output-dir DIR]\n"
    "                    [--opset 16|17] [--gen-ds-config] [--images FILE_OR_DIR]\n"
    "                    (model.onnx, model.pth, labels.txt, export_report.json into a new\n"
    "                    folder, default RUN_DIR/export/<checkpoint>; parity checked with\n"
    "                    OpenVINO on --images or the spec's validation images)\n"
    "       mrcnn-engine --spec SPEC --task prune --output-dir DIR [--checkpoint FILE]\n"
    "                    [--pruning-threshold T] [--normalizer max|L2]\n"
    "                    [--equalization-criterion union|intersection|arithmetic_mean|\n"
    "                    geometric_mean] [--pruning-granularity N] [--min-num-filters N]\n"
    "                    [--excluded-layers a,b,...]   (TAO's -pth -nm -eq -pg -nf -el;\n"
    "                    model.pt and status.json into a new or empty DIR)\n"
    "       mrcnn-engine --task dataset_import --input PATH --output-dir DIR\n"
    "                    [--format labelme|voc|cvat|yolo|coco] [--split train=0.8,val=0.2]\n"
    "                    [--seed N] [--labels FILE] [--copy-images]\n"
    "                    (another tool's data set into COCO json, one file a split, and\n"
    "                    import_report.json; the format is detected when not given)\n"
    "       mrcnn-engine --task label_check --annotations GT.json --results DT.json\n"
    "                    [--image-dir DIR] [--output-dir DIR] [--score-threshold S] [--top N]\n"
    "       mrcnn-engine --spec SPEC --task label_check [--split train|val]\n"
    "                    [--annotations GT.json --image-dir DIR] [--checkpoint FILE]\n"
    "                    [--folds K [--fold-steps N]]   (K models, each trained on the\n"
    "                    other folds: out-of-sample detections; the train split by default)\n"
    "                    [--output-dir DIR] [--score-threshold S] [--top N]\n"
    "                    (likely label mistakes from a model's detections: mistakes.json,\n"
    "                    default DIR: RUN_DIR/label_check, or beside GT.json on files)\n"
    "       mrcnn-engine --spec SPEC --task benchmark [--mode train|inference] [--steps N]\n"
    "                    [--profile]\n"
    "                    (synthetic batches of the spec's image size and model; --profile: one\n"
    "                    more step under LibTorch's profiler, its busiest operators and kernels)\n"
    "data-parallel: started by torchrun, SLURM or mrcnn-workbench --nproc-per-node, the\n"
    "engine joins their process group (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)\n"
    "tasks: train (default), validate, evaluate, inference, dataset_convert, dataset_import,\n"
    "       dataset_stats, label_check, benchmark, export, prune\n";

// Options that take a value; --set may be repeated.
const std::set<std::string> kValueOptions = {"--spec",
                                             "--task",
                                             "--run-dir",
                                             "--set",
                                             "--annotations",
                                             "--results",
                                             "--iou-type",
                                             "--metrics-out",
                                             "--image-dir",
                                             "--output-dir",
                                             "--tag",
                                             "--num-shards",
                                             "--include-mask",
                                             "--images",
                                             "--out",
                                             "--checkpoint",
                                             "--overlay-threshold",
                                             "--thresholds",
                                             "--mode",
                                             "--steps",
                                             "--opset",
                                             "--backend",
                                             "--onnx",
                                             "--pruning-threshold",
                                             "--normalizer",
                                             "--equalization-criterion",
                                             "--pruning-granularity",
                                             "--min-num-filters",
                                             "--excluded-layers",
                                             "--format",
                                             "--input",
                                             "--split",
                                             "--seed",
                                             "--labels",
                                             "--score-threshold",
                                             "--top",
                                             "--out-annotations",
                                             "--folds",
                                             "--fold-steps"};
// Options without a value.
const std::set<std::string> kFlags = {"--gen-ds-config", "--profile", "--copy-images"};

// A whole number from `min`, or nullopt.
std::optional<int64_t> wholeNumber(const std::string& text, int64_t min) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const int64_t v = std::stoll(text);
  return v >= min ? std::optional<int64_t>(v) : std::nullopt;
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

// The label check's options; nullopt after saying what is wrong.
std::optional<LabelCheckOptions> labelCheckOptions(const std::map<std::string, std::string>& values,
                                                   std::ostream& err) {
  const auto has = [&](const char* key) { return values.count(key) > 0; };
  const auto get = [&](const char* key) { return values.at(key); };
  LabelCheckOptions o;
  if (has("--annotations")) o.annotations = get("--annotations");
  if (has("--results")) o.results = get("--results");
  if (has("--image-dir")) o.image_dir = get("--image-dir");
  if (has("--output-dir")) o.output_dir = get("--output-dir");
  const bool spec = has("--spec");
  if (!spec && (o.annotations.empty() || o.results.empty())) {
    err << "mrcnn-engine: label_check needs --annotations and --results (a results file), or "
           "--spec (the spec's model runs first)\n";
    return std::nullopt;
  }
  if (spec && has("--results")) {
    err << "mrcnn-engine: label_check takes --results only without --spec (with a spec the "
           "model makes the detections)\n";
    return std::nullopt;
  }
  if (spec && o.annotations.empty() != o.image_dir.empty()) {
    err << "mrcnn-engine: label_check with --spec takes --annotations and --image-dir together "
           "(or neither: the spec's --split)\n";
    return std::nullopt;
  }
  if (has("--split")) {
    o.split = get("--split");
    if ((o.split != "train" && o.split != "val") || !spec || !o.annotations.empty()) {
      err << "mrcnn-engine: --split " << o.split
          << ": label_check takes --split train or val, with --spec and without --annotations\n";
      return std::nullopt;
    }
  }
  if (has("--folds") || has("--fold-steps")) {
    const std::optional<int64_t> folds = has("--folds") ? wholeNumber(get("--folds"), 2) : std::nullopt;
    if (!spec || !folds || *folds > 100) {
      err << "mrcnn-engine: label_check --folds K (2 to 100) trains K models from the spec: it "
             "needs --spec, and --fold-steps needs --folds\n";
      return std::nullopt;
    }
    o.folds = static_cast<uint32_t>(*folds);
    if (!has("--split") && o.annotations.empty()) o.split = "train";
    if (has("--fold-steps")) {
      const std::optional<int64_t> steps = wholeNumber(get("--fold-steps"), 1);
      if (!steps) {
        err << "mrcnn-engine: --fold-steps " << get("--fold-steps") << ": a whole number from 1\n";
        return std::nullopt;
      }
      o.fold_steps = static_cast<uint64_t>(*steps);
    }
  }
  if (has("--score-threshold")) {
    try {
      size_t used = 0;
      o.score_threshold = std::stod(get("--score-threshold"), &used);
      if (used != get("--score-threshold").size() || !(o.score_threshold > 0) ||
          o.score_threshold > 1)
        throw std::invalid_argument("range");
    } catch (const std::exception&) {
      err << "mrcnn-engine: --score-threshold " << get("--score-threshold")
          << ": a score in (0, 1]\n";
      return std::nullopt;
    }
  }
  if (has("--top")) {
    const std::optional<int64_t> top = wholeNumber(get("--top"), 0);
    if (!top) {
      err << "mrcnn-engine: --top " << get("--top") << ": a whole number\n";
      return std::nullopt;
    }
    o.top = static_cast<size_t>(*top);
  }
  return o;
}

}  // namespace

int engineMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::map<std::string, std::string> values;
  std::vector<std::string> overrides;
  std::vector<std::string> annotations;  // dataset_stats takes several
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return kExitOk;
    }
    if (a == "--version") {
      const RuntimeInfo runtime = runtimeInfo();
      out << "mrcnn-engine " << MRCNN_VERSION << '\n'
          << "LibTorch " << runtime.torch_version
          << ", CUDA build: " << (runtime.cuda_built ? "yes" : "no")
          << ", GPUs available: " << runtime.cuda_devices
          << ", CPU threads: " << runtime.cpu_threads << '\n';
      return kExitOk;
    }
    std::string value;
    bool inline_value = false;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    if (kFlags.count(a) && !inline_value) {
      if (!values.emplace(a, "true").second) {
        err << "mrcnn-engine: " << a << " given twice\n";
        return kExitUsage;
      }
      continue;
    }
    if (!kValueOptions.count(a)) {
      err << "mrcnn-engine: unknown argument \"" << a << "\"\n" << kUsage;
      return kExitUsage;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        err << "mrcnn-engine: " << a << " needs a value\n" << kUsage;
        return kExitUsage;
      }
      value = args[++i];
    }
    if (a == "--set") {
      overrides.push_back(value);
    } else if (a == "--annotations" && values.count(a)) {
      annotations.push_back(value);
    } else if (!values.emplace(a, value).second) {
      err << "mrcnn-engine: " << a << " given twice\n";
      return kExitUsage;
    }
  }
  const auto get = [&](const char* key) {
    const auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  };
  const std::string task = values.count("--task") ? get("--task") : "train";
  if (values.count("--annotations")) annotations.insert(annotations.begin(), get("--annotations"));
  if (annotations.size() > 1 && task != "dataset_stats") {
    err << "mrcnn-engine: --annotations given twice\n";
    return kExitUsage;
  }
  if (task == "dataset_import") {
    if (values.count("--spec")) {
      err << "mrcnn-engine: dataset_import takes no --spec (it makes the data set a spec then "
             "names)\n"
          << kUsage;
      return kExitUsage;
    }
    DatasetImportOptions options;
    options.format = get("--format");
    options.input = get("--input");
    options.output_dir = get("--output-dir");
    options.split = get("--split");
    options.seed = get("--seed");
    options.labels = get("--labels");
    options.copy_images = values.count("--copy-images") > 0;
    return runDatasetImport(options, out, err);
  }
  std::optional<LabelCheckOptions> label_check;
  if (task == "label_check") {
    label_check = labelCheckOptions(values, err);
    if (!label_check) return kExitUsage;
    if (!values.count("--spec")) return runLabelCheckFiles(*label_check, out, err);
  }
  if (task == "dataset_stats" && !values.count("--spec")) {
    if (annotations.empty()) {
      err << "mrcnn-engine: dataset_stats needs --spec or --annotations FILE.json\n" << kUsage;
      return kExitUsage;
    }
    DatasetStatsOptions options;
    options.annotations.assign(annotations.begin(), annotations.end());
    options.output_dir = get("--output-dir");
    return runDatasetStatsFiles(options, out, err);
  }

  // evaluate: a results file against annotations (no model), or a checkpoint on the spec's
  // validation set.
  const bool evaluate_files = values.count("--annotations") || values.count("--results");
  if (task == "evaluate" && evaluate_files && values.count("--spec")) {
    err << "mrcnn-engine: evaluate takes either --spec (a checkpoint on the spec's validation "
           "set) or --annotations and --results (a results file), not both\n"
        << kUsage;
    return kExitUsage;
  }
  if (task == "evaluate" && !values.count("--spec")) {
    EvaluateFilesOptions options;
    options.annotations = get("--annotations");
    options.results = get("--results");
    options.iou_type = get("--iou-type");
    options.metrics_out = get("--metrics-out");
    if (options.annotations.empty() || options.results.empty()) {
      err << "mrcnn-engine: evaluate needs --annotations and --results (or --spec with a "
             "trained run)\n"
          << kUsage;
      return kExitUsage;
    }
    return runEvaluateFiles(options, out, err);
  }

  if (task == "dataset_convert" && values.count("--spec")) {
    for (const char* file_option : {"--image-dir", "--annotations", "--output-dir", "--tag",
                                    "--num-shards", "--include-mask"}) {
      if (values.count(file_option)) {
        err << "mrcnn-engine: dataset_convert takes either --spec (the spec's datasets into "
               "the run directory's shards/) or --image-dir, --annotations and --output-dir, "
               "not both ("
            << file_option << " was given with --spec)\n"
            << kUsage;
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
  options.overrides = overrides;
  options.checkpoint = get("--checkpoint");
  options.test_faults = testFaultsFromEnvironment();
  if (options.spec_path.empty()) {
    err << "mrcnn-engine: --spec is required for task " << options.task << '\n' << kUsage;
    return kExitUsage;
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
  if (task == "evaluate") return runEvaluate(options, {backend, get("--onnx")}, out, err);
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
    inference.thresholds = get("--thresholds");
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
    ExportOptions ex;
    ex.output_dir = get("--output-dir");
    ex.gen_ds_config = values.count("--gen-ds-config") > 0;
    ex.images = get("--images");
    if (values.count("--opset")) {
      const std::string text = get("--opset");
      if (text != "16" && text != "17") {
        err << "mrcnn-engine: --opset " << text
            << ": the export writes opset 16 or 17 (RoiAlign's half-pixel modes need 16)\n";
        return kExitUsage;
      }
      ex.opset = std::stoi(text);
    }
    return runExport(options, ex, out, err);
  }
  if (task == "prune") {
    std::optional<PruneTaskOptions> prune = pruneOptions(values, err);
    if (!prune) return kExitUsage;
    return runPrune(options, *prune, out, err);
  }
  err << "mrcnn-engine: unknown task \"" << task << "\"\n" << kUsage;
  return kExitUsage;
}

}  // namespace mrcnn::engine
