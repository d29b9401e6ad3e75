// importDataset: input checks, the format's reader, the rules every format shares (labels,
// missing images, duplicate names, polygons and coordinates), the split, then the staged
// output renamed into place.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <unistd.h>

#include "dataset/image/image_check.h"
#include "dataset/import/coco_writer.h"
#include "dataset/import/file_util.h"
#include "dataset/import/import.h"
#include "dataset/import/imported_dataset.h"
#include "dataset/import/parallel.h"
#include "dataset/import/report.h"
#include "dataset/import/split.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;

constexpr const char* kIgnoreLabel = "__ignore__";         // LabelMe: a region that is no instance
constexpr const char* kBackgroundLabel = "_background_";   // LabelMe: index 0, no category

struct LabelRules {
  bool from_file = false;
  std::vector<std::string> categories;  // in id order
  std::set<std::string> ignored;        // instances of these labels are not instances
};

LabelRules readLabels(const fs::path& path) {
  LabelRules rules;
  rules.ignored = {kIgnoreLabel, kBackgroundLabel};
  if (path.empty()) return rules;
  rules.from_file = true;
  std::ifstream in(path);
  if (!in) throw ImportError(display(path), "", "cannot read the labels file");
  size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line == kIgnoreLabel || line == kBackgroundLabel) continue;
    if (std::find(rules.categories.begin(), rules.categories.end(), line) != rules.categories.end()) {
      throw ImportError(display(path), "line " + std::to_string(line_number),
                        "label \"" + line + "\" is listed twice");
    }
    rules.categories.push_back(line);
  }
  if (rules.categories.empty()) throw ImportError(display(path), "", "no labels in the file");
  return rules;
}

// The size of an image from its header; false when it cannot be read.
bool readSize(const fs::path& path, const std::string& embedded, uint32_t* w, uint32_t* h) {
  std::string bytes = embedded;
  if (bytes.empty()) {
    // The header is near the start: 256 KiB holds a JPEG's SOF after any EXIF block (at most
    // 64 KiB); the whole file only when it is not there.
    std::ifstream in(path, std::ios::binary);
    bytes.resize(256 << 10);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(in.gcount()));
    if (!readImageHeader(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) &&
        in) {
      bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  const auto header = readImageHeader(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!header) return false;
  *w = header->width;
  *h = header->height;
  return true;
}

// Polygons of fewer than 3 points are dropped and coordinates outside the image clipped,
// each with a warning; false when nothing of the instance is left.
bool checkGeometry(ImportedInstance& instance, const ImportedImage& image, ProblemLog& log) {
  const double w = image.width, h = image.height;
  std::vector<Polygon> kept;
  for (size_t k = 0; k < instance.polygons.size(); ++k) {
    Polygon& p = instance.polygons[k];
    const std::string which = instance.polygons.size() > 1 ? " (polygon " + std::to_string(k) + ")" : "";
    if (p.size() % 2 != 0) p.pop_back();
    if (p.size() < 6) {
      log.skip("polygon_too_few_points", instance.file, instance.place + which,
               "a polygon of " + std::to_string(p.size() / 2) + " point(s) has no area: skipped");
      continue;
    }
    kept.push_back(std::move(p));
  }
  instance.polygons = std::move(kept);
  double worst = 0;  // the farthest a coordinate lies outside the image, in pixels
  for (Polygon& p : instance.polygons) {
    for (size_t k = 0; k < p.size(); ++k) {
      const double limit = k % 2 == 0 ? w : h;
      const double clipped = std::clamp(p[k], 0.0, limit);
      worst = std::max(worst, std::abs(clipped - p[k]));
      p[k] = clipped;
    }
  }
  if (instance.box) {
    Box& b = *instance.box;
    const double x0 = std::clamp(b[0], 0.0, w), y0 = std::clamp(b[1], 0.0, h);
    const double x1 = std::clamp(b[0] + b[2], 0.0, w), y1 = std::clamp(b[1] + b[3], 0.0, h);
    worst = std::max({worst, std::abs(x0 - b[0]), std::abs(y0 - b[1]), std::abs(x1 - b[0] - b[2]),
                      std::abs(y1 - b[1] - b[3])});
    b = {x0, y0, x1 - x0, y1 - y0};
    if (b[2] <= 0 || b[3] <= 0) {
      log.skip("empty_box", instance.file, instance.place, "a box of no area inside the image: skipped");
      instance.box.reset();
    }
  }
  if (worst > 0) {
    log.warn("clipped_to_image", instance.file, instance.place,
             "coordinates up to " + std::to_string(worst) + " px outside the " +
                 std::to_string(image.width) + "x" + std::to_string(image.height) +
                 " image: clipped to its border");
  }
  if (instance.mask && (instance.mask->w != image.width || instance.mask->h != image.height)) {
    log.skip("mask_size_mismatch", instance.file, instance.place,
             "a mask of " + std::to_string(instance.mask->w) + "x" + std::to_string(instance.mask->h) +
                 " on a " + std::to_string(image.width) + "x" + std::to_string(image.height) + " image: skipped");
    instance.mask.reset();
  }
  return !instance.polygons.empty() || instance.mask || instance.box;
}

std::string readerFor(const std::string& format, const ReadContext& context, ImportedDataset* out) {
  if (format == "labelme") *out = readLabelMe(context);
  else if (format == "voc") *out = readVoc(context);
  else if (format == "cvat") *out = readCvat(context);
  else if (format == "yolo") *out = readYolo(context);
  else if (format == "coco") *out = readCoco(context);
  else return "unknown format \"" + format + "\": use labelme, voc, cvat, yolo or coco";
  return "";
}

// Names a split's file can carry.
std::string safeName(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return s.empty() ? "default" : s;
}

// `output_dir`: absolute and normal.
std::string outputFileName(const ImportedImage& image, const std::string& split, bool copy,
                           const fs::path& output_dir) {
  if (copy || !image.embedded.empty()) {
    return "images/" + safeName(split) + "/" + image.path.filename().string();
  }
  const fs::path absolute = fs::absolute(image.path).lexically_normal();
  const fs::path relative = absolute.lexically_relative(output_dir);
  return relative.empty() ? absolute.string() : relative.string();
}

// The output folder's staging sibling: ".<name>.import-<pid>-<random>".
fs::path stagingFolder(const fs::path& output_dir) {
  const fs::path absolute = fs::absolute(output_dir).lexically_normal();
  const fs::path parent = absolute.parent_path();
  std::random_device random;
  return parent / ("." + absolute.filename().string() + ".import-" + std::to_string(::getpid()) + "-" +
                   std::to_string(random()));
}

}  // namespace

ImportSummary importDataset(const ImportOptions& options,
                            const std::function<void(const std::string&)>& progress) {
  const auto started = std::chrono::steady_clock::now();
  auto report = [&](const std::string& line) {
    if (progress) progress(line);
  };
  ImportSummary summary;
  summary.input = options.input;
  summary.output_dir = options.output_dir;
  if (!fs::exists(options.input)) throw ImportError(display(options.input), "", "no such file or folder");
  if (options.output_dir.empty()) throw ImportError("", "", "no output folder given");
  if (fs::exists(options.output_dir) &&
      (!fs::is_directory(options.output_dir) || !fs::is_empty(options.output_dir))) {
    throw ImportError(display(options.output_dir), "",
                      "the output folder exists and is not empty: choose a new folder or empty this one");
  }
  std::vector<std::pair<std::string, double>> fractions = options.split;
  if (fractions.empty()) fractions = {{"train", 1.0}};
  const LabelRules labels = readLabels(options.labels);

  summary.format = options.format;
  if (summary.format.empty()) {
    const std::optional<std::string> detected = detectFormat(options.input);
    if (!detected) {
      throw ImportError(display(options.input), "",
                        "the format cannot be told from the input: give it (labelme, voc, cvat, yolo, coco)");
    }
    summary.format = *detected;
    summary.format_guessed = true;
    report("format: " + summary.format + " (guessed from the input)");
  }
  ProblemLog log;
  ReadContext context;
  context.input = options.input;
  context.threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  context.log = &log;
  context.progress = &progress;
  ImportedDataset dataset;
  if (const std::string error = readerFor(summary.format, context, &dataset); !error.empty()) {
    throw ImportError("", "", error);
  }

  // Images: missing ones (unless LabelMe embedded them) and unreadable ones are skipped. The
  // files are looked at on the threads (a system call or a header read each), the problems
  // logged in the images' order.
  enum class ImageState : uint8_t { kOk, kMissing, kUnreadable };
  std::vector<ImageState> image_state(dataset.images.size(), ImageState::kOk);
  parallelFor(dataset.images.size(), context.threads, [&](size_t i) {
    ImportedImage& image = dataset.images[i];
    std::error_code ec;
    const bool exists = fs::exists(image.path, ec);
    if (!exists && image.embedded.empty()) {
      image_state[i] = ImageState::kMissing;
      return;
    }
    if (exists) image.embedded.clear();
    if ((image.width == 0 || image.height == 0) &&
        !readSize(image.path, image.embedded, &image.width, &image.height)) {
      image_state[i] = ImageState::kUnreadable;
    }
  });
  std::vector<bool> image_ok(dataset.images.size(), true);
  for (size_t i = 0; i < dataset.images.size(); ++i) {
    const ImportedImage& image = dataset.images[i];
    if (image_state[i] == ImageState::kMissing) {
      log.skip("image_missing", display(image.path), "",
               "the image named by " + image.source + " does not exist: skipped with its annotations");
    } else if (image_state[i] == ImageState::kUnreadable) {
      log.skip("image_unreadable", display(image.path), "", "its size cannot be read: skipped");
    }
    image_ok[i] = image_state[i] == ImageState::kOk;
  }
  // Two files of one name in one split would collide once copied, and are most often the
  // same picture found twice: an error naming both.
  std::map<std::pair<std::string, std::string>, size_t> by_name;
  for (size_t i = 0; i < dataset.images.size(); ++i) {
    if (!image_ok[i]) continue;
    const ImportedImage& image = dataset.images[i];
    const auto [it, added] = by_name.try_emplace({image.split, image.path.filename().string()}, i);
    if (!added) {
      const ImportedImage& first = dataset.images[it->second];
      if (fs::absolute(first.path).lexically_normal() == fs::absolute(image.path).lexically_normal()) {
        throw ImportError(image.source, "", "the image " + display(image.path) + " is annotated twice (also by " +
                                                first.source + "): remove one of the two");
      }
      throw ImportError(display(image.path), "",
                        "another image of the same name is " + display(first.path) +
                            ": two images of one file name in different folders; rename one");
    }
  }

  // Instances: labels, then geometry.
  std::set<std::string> used;
  std::vector<bool> instance_ok(dataset.instances.size(), true);
  for (size_t i = 0; i < dataset.instances.size(); ++i) {
    ImportedInstance& instance = dataset.instances[i];
    if (!image_ok[instance.image]) {
      instance_ok[i] = false;
      continue;
    }
    if (labels.ignored.count(instance.label) != 0) {
      log.skip("ignored_label", instance.file, instance.place,
               "label \"" + instance.label + "\" marks a region that is not an instance: skipped");
      instance_ok[i] = false;
      continue;
    }
    if (labels.from_file && std::find(labels.categories.begin(), labels.categories.end(), instance.label) ==
                                labels.categories.end()) {
      log.skip("unknown_label", instance.file, instance.place,
               "label \"" + instance.label + "\" is not in " + display(options.labels) + ": skipped");
      instance_ok[i] = false;
      continue;
    }
    if (!checkGeometry(instance, dataset.images[instance.image], log)) {
      log.skip("no_geometry", instance.file, instance.place, "nothing of the instance is left: skipped");
      instance_ok[i] = false;
      continue;
    }
    used.insert(instance.label);
  }
  summary.categories = labels.categories;
  if (!labels.from_file) {
    std::set<std::string> names(used);
    for (const std::string& d : dataset.declared_labels) {
      if (labels.ignored.count(d) == 0) names.insert(d);
    }
    summary.categories.assign(names.begin(), names.end());
  }
  std::map<std::string, int64_t> category_ids;
  for (size_t k = 0; k < summary.categories.size(); ++k) {
    category_ids[summary.categories[k]] = static_cast<int64_t>(k + 1);
  }

  // Area, box and RLE of every instance: the costly part (polygon rasterisation), in parallel.
  std::vector<CocoGeometry> geometry(dataset.instances.size());
  parallelFor(dataset.instances.size(), context.threads, [&](size_t i) {
    if (!instance_ok[i]) return;
    const ImportedInstance& instance = dataset.instances[i];
    const ImportedImage& image = dataset.images[instance.image];
    geometry[i] = cocoGeometry(instance, image.width, image.height);
  });
  for (size_t i = 0; i < dataset.instances.size(); ++i) {
    if (instance_ok[i] && geometry[i].area <= 0) {
      log.skip("empty_instance", dataset.instances[i].file, dataset.instances[i].place,
               "its mask covers no pixel: skipped");
      instance_ok[i] = false;
    }
  }

  // Splits.
  std::vector<std::string> split(dataset.images.size());
  std::vector<std::string> keys(dataset.images.size());
  for (size_t i = 0; i < dataset.images.size(); ++i) {
    split[i] = dataset.images[i].split;
    keys[i] = dataset.images[i].path.string();
  }
  assignSplits(fractions, options.seed, keys, &split);

  std::map<std::string, CocoSplitOutput> outputs;
  const fs::path output_absolute = fs::absolute(options.output_dir).lexically_normal();
  std::vector<std::string> file_names(dataset.images.size());
  parallelFor(dataset.images.size(), context.threads, [&](size_t i) {
    if (image_ok[i])
      file_names[i] = outputFileName(dataset.images[i], split[i], options.copy_images, output_absolute);
  });
  for (size_t i = 0; i < dataset.images.size(); ++i) {
    if (!image_ok[i]) {
      ++summary.images_skipped;
      continue;
    }
    CocoSplitOutput& out = outputs[split[i]];
    out.images.push_back(static_cast<uint32_t>(i));
    out.file_names.push_back(std::move(file_names[i]));
  }
  for (size_t i = 0; i < dataset.instances.size(); ++i) {
    if (!instance_ok[i]) {
      ++summary.instances_skipped;
      continue;
    }
    const ImportedInstance& instance = dataset.instances[i];
    const std::string& s = split[instance.image];
    outputs[s].instances.push_back(static_cast<uint32_t>(i));
    SplitCounts& counts = summary.splits[s];
    ++counts.instances;
    ++counts.instances_per_class[instance.label];
  }
  for (const auto& [name, out] : outputs) summary.splits[name].images = out.images.size();
  summary.warnings = std::move(log.warnings());
  summary.skipped = std::move(log.skipped());

  // Staged output, renamed into place at the end.
  const fs::path staging = stagingFolder(options.output_dir);
  try {
    fs::create_directories(staging / "annotations");
    for (const auto& [name, out] : outputs) {
      const fs::path json = staging / "annotations" / ("instances_" + safeName(name) + ".json");
      report("writing " + json.filename().string());
      writeCocoSplit(json, dataset, out, summary.categories, category_ids, geometry, context.threads);
      summary.written.push_back(fs::path(options.output_dir) / "annotations" / json.filename());
      for (size_t k = 0; k < out.images.size(); ++k) {
        const ImportedImage& image = dataset.images[out.images[k]];
        if (!options.copy_images && image.embedded.empty()) continue;
        const fs::path target = staging / out.file_names[k];
        fs::create_directories(target.parent_path());
        if (!image.embedded.empty()) {
          std::ofstream(target, std::ios::binary).write(image.embedded.data(),
                                                        static_cast<std::streamsize>(image.embedded.size()));
        } else {
          fs::copy_file(image.path, target);
        }
        summary.written.push_back(fs::path(options.output_dir) / out.file_names[k]);
      }
    }
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    summary.written.push_back(fs::path(options.output_dir) / "import_report.json");
    writeReportJson(staging / "import_report.json", summary);
    if (fs::exists(options.output_dir)) fs::remove(options.output_dir);  // empty, checked above
    fs::rename(staging, options.output_dir);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
  return summary;
}

}  // namespace mrcnn::dataset::import
