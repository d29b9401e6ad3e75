#include <chrono>
#include <exception>
#include <filesystem>
#include <ostream>

#include "dataset/shapes_generator.h"
#include "engine/device.h"
#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"
#include "engine/util/atomic_file.h"
#include "specs/spec.h"

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

int runTrain(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const spec::LoadedSpec loaded = spec::loadSpecFile(options.spec_path, options.overrides);
  for (const auto& d : loaded.diagnostics)
    err << d.format() << '\n';
  if (!loaded.ok()) {
    err << loaded.errors().size() << " error(s) in " << options.spec_path.string()
        << "; nothing was run\n";
    return kExitBadSpec;
  }
  const spec::Experiment& s = loaded.spec;
  const spec::Resolved& r = loaded.resolved;

  const RuntimeInfo runtime = runtimeInfo();
  const DeviceChoice device = chooseDevice(s.device(), runtime);
  if (!device.ok) {
    err << options.spec_path.string() << ": error: device: " << device.error << '\n';
    return kExitBadSpec;
  }
  out << "LibTorch " << runtime.torch_version
      << " (CUDA build: " << (runtime.cuda_built ? "yes" : "no")
      << ", GPUs: " << runtime.cuda_devices << ", CPU threads: " << runtime.cpu_threads
      << "); device " << device.name << '\n';

  const fs::path run_dir = options.run_dir.empty() ? r.output_dir / r.run_name : options.run_dir;
  try {
    writeFileAtomic(run_dir / "spec.txt",
                    "# " + options.spec_path.string() + ", as run\n" + spec::printResolved(s));
  } catch (const std::exception& e) {
    err << "error: run directory: " << e.what() << '\n';
    return kExitBadData;
  }
  out << "run directory " << run_dir.string() << '\n';

  fs::path train_dir = r.train_image_dir, train_json = r.train_json_file;
  fs::path val_dir = r.val_image_dir, val_json = r.val_json_file;
  if (!r.shapes_root.empty()) {
    const spec::ShapesDataset& sh = s.data_config().shapes_dataset();
    dataset::ShapesOptions shapes;
    shapes.root = r.shapes_root;
    shapes.train_images = static_cast<int>(sh.train_images());
    shapes.val_images = static_cast<int>(sh.val_images());
    shapes.min_side = static_cast<int>(sh.min_side());
    shapes.max_side = static_cast<int>(sh.max_side());
    shapes.max_shapes = static_cast<int>(sh.max_shapes());
    shapes.seed = sh.seed();
    const auto started = std::chrono::steady_clock::now();
    dataset::ShapesSummary summary;
    try {
      summary = dataset::generateShapes(shapes);
    } catch (const std::exception& e) {
      err << "error: data_config.shapes_dataset: " << e.what() << '\n';
      return kExitBadData;
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
    train_dir = dataset::shapesImageDir(r.shapes_root, "train");
    train_json = dataset::shapesAnnotationFile(r.shapes_root, "train");
    if (val_json.empty()) {
      val_dir = dataset::shapesImageDir(r.shapes_root, "val");
      val_json = dataset::shapesAnnotationFile(r.shapes_root, "val");
    }
  }

  bool data_ok = true;
  if (!train_json.empty()) {
    data_ok &= requirePath(train_json, "train_json_file", false, err);
    data_ok &= requirePath(train_dir, "train_image_dir", true, err);
  }
  if (!val_json.empty()) data_ok &= requirePath(val_json, "val_json_file", false, err);
  if (!val_dir.empty()) data_ok &= requirePath(val_dir, "val_image_dir", true, err);
  if (!data_ok) return kExitBadData;
  out << "training data: "
      << (train_json.empty() ? s.data_config().training_file_pattern() : train_json.string())
      << '\n';
  if (!val_json.empty()) out << "validation data: " << val_json.string() << '\n';

  // The training loop, evaluation and overlays are the engine's next stage; until it lands
  // this task stops here, with the spec checked and the data ready.
  out << "spec valid and data ready; the training loop is not part of this build yet\n";
  return kExitOk;
}

}  // namespace mrcnn::engine
