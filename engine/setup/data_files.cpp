#include "engine/setup/data_files.h"

#include <chrono>
#include <exception>
#include <ostream>

#include "dataset/shapes/shapes_generator.h"

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

}  // namespace mrcnn::engine
