#include "engine/file_cli.h"

#include <ostream>
#include <stdexcept>

#include "engine/exit_codes.h"
#include "engine/file_tasks.h"

namespace mrcnn::engine {

namespace {

constexpr const char* kFileTaskUsage =
    "       PROGRAM --task evaluate --annotations GT.json --results DT.json\n"
    "                    [--iou-type bbox|segm|both] [--metrics-out METRICS.json]\n"
    "       PROGRAM --task dataset_stats --annotations F.json [--annotations G.json]\n"
    "                    [--output-dir DIR]   (the dataset check: tables, stats.json)\n"
    "       PROGRAM --task dataset_import --input PATH --output-dir DIR\n"
    "                    [--format labelme|voc|cvat|yolo|coco] [--split train=0.8,val=0.2]\n"
    "                    [--seed N] [--labels FILE] [--copy-images]\n"
    "                    (another tool's data set into COCO json, one file a split, and\n"
    "                    import_report.json; the format is detected when not given)\n"
    "       PROGRAM --task label_check --annotations GT.json --results DT.json\n"
    "                    [--image-dir DIR] [--output-dir DIR] [--score-threshold S] [--top N]\n"
    "                    (likely label mistakes from a results file: mistakes.json, default\n"
    "                    DIR beside GT.json)\n";

}  // namespace

std::string fileTaskUsage(const std::string& program) {
  std::string text = kFileTaskUsage;
  for (size_t at = 0; (at = text.find("PROGRAM", at)) != std::string::npos;)
    text.replace(at, 7, program);
  return text;
}

std::optional<LabelCheckOptions> labelCheckOptions(const CommandLine& c, std::ostream& err) {
  const auto has = [&](const char* key) { return c.has(key); };
  const auto get = [&](const char* key) { return c.get(key); };
  const char* program = programName();
  LabelCheckOptions o;
  if (has("--annotations")) o.annotations = get("--annotations");
  if (has("--results")) o.results = get("--results");
  if (has("--image-dir")) o.image_dir = get("--image-dir");
  if (has("--output-dir")) o.output_dir = get("--output-dir");
  const bool spec = has("--spec");
  if (!spec && (o.annotations.empty() || o.results.empty())) {
    err << program << ": label_check needs --annotations and --results (a results file), or "
                      "--spec (the spec's model runs first, in mrcnn-engine)\n";
    return std::nullopt;
  }
  if (spec && has("--results")) {
    err << program << ": label_check takes --results only without --spec (with a spec the "
                      "model makes the detections)\n";
    return std::nullopt;
  }
  if (spec && o.annotations.empty() != o.image_dir.empty()) {
    err << program << ": label_check with --spec takes --annotations and --image-dir together "
                      "(or neither: the spec's --split)\n";
    return std::nullopt;
  }
  if (has("--split")) {
    o.split = get("--split");
    if ((o.split != "train" && o.split != "val") || !spec || !o.annotations.empty()) {
      err << program << ": --split " << o.split
          << ": label_check takes --split train or val, with --spec and without --annotations\n";
      return std::nullopt;
    }
  }
  if (has("--folds") || has("--fold-steps")) {
    const std::optional<int64_t> folds = has("--folds") ? wholeNumber(get("--folds"), 2) : std::nullopt;
    if (!spec || !folds || *folds > 100) {
      err << program << ": label_check --folds K (2 to 100) trains K models from the spec: it "
                        "needs --spec, and --fold-steps needs --folds\n";
      return std::nullopt;
    }
    o.folds = static_cast<uint32_t>(*folds);
    if (!has("--split") && o.annotations.empty()) o.split = "train";
    if (has("--fold-steps")) {
      const std::optional<int64_t> steps = wholeNumber(get("--fold-steps"), 1);
      if (!steps) {
        err << program << ": --fold-steps " << get("--fold-steps") << ": a whole number from 1\n";
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
      err << program << ": --score-threshold " << get("--score-threshold")
          << ": a score in (0, 1]\n";
      return std::nullopt;
    }
  }
  if (has("--top")) {
    const std::optional<int64_t> top = wholeNumber(get("--top"), 0);
    if (!top) {
      err << program << ": --top " << get("--top") << ": a whole number\n";
      return std::nullopt;
    }
    o.top = static_cast<size_t>(*top);
  }
  return o;
}

int runFileTask(const CommandLine& c, std::ostream& out, std::ostream& err) {
  const std::string task = c.task();
  const std::string usage = "usage:\n" + fileTaskUsage(programName());
  if (task == "dataset_import") {
    if (c.has("--spec")) {
      err << programName() << ": dataset_import takes no --spec (it makes the data set a spec "
                              "then names)\n"
          << usage;
      return kExitUsage;
    }
    DatasetImportOptions options;
    options.format = c.get("--format");
    options.input = c.get("--input");
    options.output_dir = c.get("--output-dir");
    options.split = c.get("--split");
    options.seed = c.get("--seed");
    options.labels = c.get("--labels");
    options.copy_images = c.has("--copy-images");
    return runDatasetImport(options, out, err);
  }
  if (task == "label_check") {
    const std::optional<LabelCheckOptions> check = labelCheckOptions(c, err);
    if (!check) return kExitUsage;
    return runLabelCheckFiles(*check, out, err);
  }
  if (task == "dataset_stats") {
    if (c.annotations.empty()) {
      err << programName() << ": dataset_stats needs --spec or --annotations FILE.json\n"
          << usage;
      return kExitUsage;
    }
    DatasetStatsOptions options;
    options.annotations.assign(c.annotations.begin(), c.annotations.end());
    options.output_dir = c.get("--output-dir");
    return runDatasetStatsFiles(options, out, err);
  }
  if (task == "evaluate") {
    EvaluateFilesOptions options;
    options.annotations = c.get("--annotations");
    options.results = c.get("--results");
    options.iou_type = c.get("--iou-type");
    options.metrics_out = c.get("--metrics-out");
    if (options.annotations.empty() || options.results.empty()) {
      err << programName() << ": evaluate needs --annotations and --results (or --spec with a "
                              "trained run, in mrcnn-engine)\n"
          << usage;
      return kExitUsage;
    }
    return runEvaluateFiles(options, out, err);
  }
  err << programName() << ": task \"" << task << "\" does not run on files alone\n" << usage;
  return kExitUsage;
}

int dataMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string program = programName();
  const std::string usage = "usage: " + program +
                            " --task TASK ...   (the tasks on annotation files: no model, no "
                            "images decoded)\n" +
                            fileTaskUsage(program);
  const std::optional<CommandLine> c = parseCommandLine(args, err, usage.c_str());
  if (!c) return kExitUsage;
  if (c->help) {
    out << usage << "tasks: dataset_import, dataset_stats, evaluate, label_check; the others "
                    "(and these with --spec) run in mrcnn-engine\n";
    return kExitOk;
  }
  if (c->version) {
    out << program << ' ' << MRCNN_VERSION << " (the tasks on annotation files; no LibTorch)\n";
    return kExitOk;
  }
  if (!c->has("--task")) {
    err << program << ": --task is required\n" << usage;
    return kExitUsage;
  }
  if (!isFileTask(c->task(), c->has("--spec"))) {
    err << program << ": --task " << c->task()
        << (c->has("--spec") ? " with --spec" : "")
        << " runs a model or reads images: run it with mrcnn-engine (or mrcnn-workbench "
           "--headless)\n";
    return kExitUsage;
  }
  return runFileTask(*c, out, err);
}

}  // namespace mrcnn::engine
