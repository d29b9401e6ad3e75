#include "engine/tasks/task_common.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <fstream>
#include <ostream>

#include "dataset/shapes_generator.h"
#include "engine/exit_codes.h"
#include "io/atomic_file.h"
#include "io/write_error.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// Checks that a dataset file or folder named by the spec exists.
bool requirePath(const fs::path& path, const char* field, bool folder, std::ostream& err) {
  std::error_code ec;
  const bool ok = folder ? fs::is_directory(path, ec) : fs::is_regular_file(path, ec);
  if (!ok) {
    err << "error: data_config." << field << ": " << (folder ? "no such folder " : "no such file ")
        << path.string() << '\n';
  }
  return ok;
}

}  // namespace

std::optional<spec::LoadedSpec> loadSpecReporting(const TaskOptions& options, std::ostream& err) {
  spec::LoadedSpec loaded = spec::loadSpecFile(options.spec_path, options.overrides);
  // Training data and a step count are required to train (and validate), not to run a model.
  if (options.task != "train" && options.task != "validate") loaded.dropTrainingRequirements();
  for (const auto& d : loaded.diagnostics)
    err << d.format() << '\n';
  if (!loaded.ok()) {
    err << loaded.errors().size() << " error(s) in " << options.spec_path.string()
        << "; nothing was run\n";
    return std::nullopt;
  }
  return loaded;
}

fs::path runDirectory(const TaskOptions& options, const spec::LoadedSpec& loaded) {
  return options.run_dir.empty() ? loaded.resolved.output_dir / loaded.resolved.run_name
                                 : options.run_dir;
}

std::optional<DataFiles> prepareData(const spec::LoadedSpec& loaded, std::ostream& out,
                                     std::ostream& err, const DataNeeds& needs) {
  const spec::Experiment& s = loaded.spec;
  const spec::Resolved& r = loaded.resolved;
  DataFiles files{r.train_image_dir, r.train_json_file, r.val_image_dir, r.val_json_file};
  if (!r.shapes_root.empty()) {
    const spec::ShapesDataset& sh = s.data_config().shapes_dataset();
    dataset::ShapesOptions shapes;
    shapes.root = r.shapes_root;
    shapes.train_images = static_cast<int>(sh.train_images());
    shapes.val_images = static_cast<int>(sh.val_images());
    shapes.min_side = static_cast<int>(sh.min_side());
    shapes.max_side = static_cast<int>(sh.max_side());
    shapes.max_shapes = static_cast<int>(sh.max_shapes());
    shapes.categories = static_cast<int>(sh.categories());
    shapes.clutter = sh.clutter();
    shapes.min_shape_size = static_cast<int>(sh.min_shape_size());
    shapes.seed = sh.seed();
    const auto started = std::chrono::steady_clock::now();
    dataset::ShapesSummary summary;
    try {
      summary = dataset::generateShapes(shapes);
    } catch (const std::exception& e) {
      err << "error: data_config.shapes_dataset: " << e.what() << '\n';
      return std::nullopt;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (summary.generated) {
      out << "shapes dataset generated in " << r.shapes_root.string() << " (" << seconds
          << " s): train " << summary.train.images << " images / " << summary.train.annotations
          << " instances, val " << summary.val.images << " images / " << summary.val.annotations
          << " instances\n";
    } else {
      out << "shapes dataset up to date in " << r.shapes_root.string() << '\n';
    }
    files.train_image_dir = dataset::shapesImageDir(r.shapes_root, "train");
    files.train_json = dataset::shapesAnnotationFile(r.shapes_root, "train");
    if (files.val_json.empty()) {
      files.val_image_dir = dataset::shapesImageDir(r.shapes_root, "val");
      files.val_json = dataset::shapesAnnotationFile(r.shapes_root, "val");
    }
  }

  bool ok = true;
  if (needs.train && !files.train_json.empty()) {
    ok &= requirePath(files.train_json, "train_json_file", false, err);
    ok &= requirePath(files.train_image_dir, "train_image_dir", true, err);
  }
  if (needs.val_json && !files.val_json.empty()) {
    ok &= requirePath(files.val_json, "val_json_file", false, err);
  }
  if (needs.val_images && !files.val_image_dir.empty()) {
    ok &= requirePath(files.val_image_dir, "val_image_dir", true, err);
  }
  if (!ok) return std::nullopt;
  return files;
}

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
  return startingWeights(loaded);
}

int runModelTask(const TaskOptions& options, std::ostream& out, std::ostream& err,
                 const std::function<int(const ModelTaskContext&)>& task) {
  const std::optional<spec::LoadedSpec> loaded = loadSpecReporting(options, err);
  if (!loaded) return kExitBadSpec;
  const fs::path run_dir = runDirectory(options, *loaded);
  std::error_code ec;
  const bool has_run_dir = !options.run_dir.empty() || fs::is_directory(run_dir, ec);
  std::unique_ptr<train::EventWriter> events =
      openTaskEvents(has_run_dir ? run_dir : fs::path(), err);
  if (!events) return kExitBadData;
  out.flush();
  TaskReport report(events.get(), out, err);
  try {
    return task({*loaded, run_dir, has_run_dir, report});
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return exitCodeFor(e, kExitFailed);
  }
}

StagingDir::StagingDir(const fs::path& final_dir)
    : path_(final_dir.parent_path() / ("." + final_dir.filename().string() + ".partial")) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_);
}

StagingDir::~StagingDir() {
  std::error_code ec;
  if (!kept_) fs::remove_all(path_, ec);
}

void StagingDir::moveTo(const fs::path& final_dir) {
  fs::rename(path_, final_dir);
  kept_ = true;
  io::syncPath(final_dir.parent_path(), /*directory=*/true);
}

fs::path startingWeights(const spec::LoadedSpec& loaded) {
  for (const std::string& name : {loaded.spec.pruned_model_path(), loaded.spec.checkpoint()}) {
    if (name.empty()) continue;
    const fs::path p(name);
    return p.is_absolute() ? p : loaded.resolved.spec_dir / p;
  }
  return {};
}

std::string weightsSearched(const TaskOptions& options, const fs::path& run_dir) {
  return "no --checkpoint was given, the run directory has no " +
         (run_dir / "checkpoints" / "last").string() + " and " + options.spec_path.string() +
         " sets no pruned_model_path or checkpoint; give --checkpoint FILE, set the spec's "
         "checkpoint, or train in the run directory first";
}

train::CocoSummary cocoSummary(const eval::EvalResult& result, const dataset::CocoDataset& gt) {
  train::CocoSummary s;
  s.stats.assign(result.stats.begin(), result.stats.end());
  for (size_t k = 0; k < result.category_ids.size(); ++k) {
    s.per_category_ap[result.category_ids[k]] = result.per_category_ap[k];
  }
  for (const auto& c : gt.categories())
    s.category_names[c.id] = c.name;
  return s;
}

TaskReport::TaskReport(train::EventWriter* events, std::ostream& out, std::ostream& err)
    : events_(events), out_(out), err_(err), started_(std::chrono::steady_clock::now()) {}

void TaskReport::write(events::Event event) {
  if (events_) events_->write(std::move(event));
}

void TaskReport::log(const std::string& text) {
  if (events_) {
    events_->write(train::logEvent(text));
  } else {
    out_ << text;
    if (text.empty() || text.back() != '\n') out_ << '\n';
  }
}

void TaskReport::warn(const std::string& code, const std::string& message, int64_t image_id) {
  if (events_) {
    events_->write(train::warningEvent(code, message, image_id));
  } else {
    err_ << "warning: " << message << '\n';
  }
}

int TaskReport::fail(const std::string& code, const std::string& message, int exit_code) {
  std::string text = message;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  err_ << "error: " << text << '\n';
  err_.flush();
  if (events_) writeFailureEvents(*events_, code, text, exit_code, elapsed(), err_);
  return exit_code;
}

int TaskReport::fail(const std::exception& e, const std::string& code, const std::string& context,
                     int exit_code) {
  if (isDiskFull(e)) return fail("disk_full", e.what(), kExitBadData);
  return fail(code, context + e.what(), exit_code);
}

bool isDiskFull(const std::exception& e) {
  return dynamic_cast<const io::DiskFullError*>(&e) != nullptr;
}

int exitCodeFor(const std::exception& e, int otherwise) {
  return isDiskFull(e) ? kExitBadData : otherwise;
}

void writeFailureEvents(train::EventWriter& events, const std::string& code,
                        const std::string& message, int exit_code, double elapsed_seconds,
                        std::ostream& err) {
  std::string file_error;
  for (events::Event event : {train::errorEvent(code, message, static_cast<uint32_t>(exit_code)),
                              train::doneEvent("failed", message, elapsed_seconds)}) {
    try {
      events.write(std::move(event));
    } catch (const std::exception& e) {
      if (file_error.empty()) file_error = e.what();
    }
  }
  // A full disk: stdout had both events, the run directory's files could not take them.
  if (!file_error.empty()) err << "error: " << file_error << '\n';
}

double TaskReport::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

std::unique_ptr<train::EventWriter> openTaskEvents(const fs::path& run_dir, std::ostream& err) {
  train::EventWriterOptions writer_options;
  if (!run_dir.empty()) {
    std::error_code ec;
    fs::create_directories(run_dir, ec);
    if (ec) {
      err << "error: run directory: cannot create the folder " << run_dir.string() << ": "
          << ec.message() << '\n';
      return nullptr;
    }
    writer_options.events_file = run_dir / "events.jsonl";
  }
  try {
    return std::make_unique<train::EventWriter>(writer_options);
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return nullptr;
  }
}

double processResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

}  // namespace mrcnn::engine
