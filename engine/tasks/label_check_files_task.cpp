// The label check on files (review/mistake_finder.h): annotations and a COCO results file on
// their images, no model: mistakes.json into the output folder and the first entries printed.
// The spec mode (label_check_task.cpp) runs the model first and ends here too.
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "dataset/coco/coco.h"
#include "engine/events/event_writer.h"
#include "engine/exit_codes.h"
#include "engine/tasks/label_check.h"
#include "engine/tasks/tasks.h"
#include "eval/results_json.h"
#include "io/atomic_file.h"
#include "review/mistakes_json.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// "<annotations stem>.label_check" beside the file, numbered when that folder is taken.
fs::path besideAnnotations(const fs::path& annotations) {
  const fs::path base = annotations.parent_path() / (annotations.stem().string() + ".label_check");
  fs::path dir = base;
  std::error_code ec;
  for (int n = 2; fs::exists(dir, ec) && !fs::is_empty(dir, ec); ++n)
    dir = base.string() + "-" + std::to_string(n);
  return dir;
}

std::string cell(std::string text, size_t width) {
  if (text.size() > width) text = text.substr(0, width - 1) + "~";
  return text + std::string(width - text.size(), ' ');
}

// The first `top` entries as a table: rank, score, kind, image, annotation, what was seen.
std::string topTable(const review::FinderResult& found, const dataset::CocoDataset& gt,
                     size_t top) {
  std::ostringstream o;
  const size_t n = std::min(top, found.mistakes.size());
  o << "likely label mistakes: " << found.mistakes.size() << " (the model's typical overlap "
    << std::to_string(found.typical_overlap).substr(0, 4) << " over "
    << found.confident_matches << " confident matches)";
  if (n == 0) return o.str();
  o << "; the first " << n << ":\n";
  o << "  " << cell("#", 4) << cell("score", 7) << cell("kind", 14) << cell("image", 24)
    << cell("annotation", 12) << "detail\n";
  for (size_t i = 0; i < n; ++i) {
    const review::Mistake& m = found.mistakes[i];
    std::string image = std::to_string(m.image_id);
    if (const auto index = gt.imageIndex(m.image_id))
      image = std::string(gt.images()[*index].file_name);
    char score[16];
    std::snprintf(score, sizeof score, "%.3f", m.score);
    o << "  " << cell(std::to_string(i + 1), 4) << cell(score, 7)
      << cell(review::kindName(m.kind), 14) << cell(image, 24)
      << cell(m.annotation_id ? std::to_string(*m.annotation_id) : "-", 12) << m.detail;
    if (i + 1 < n) o << '\n';
  }
  return o.str();
}

}  // namespace

// Loads, checks and writes mistakes.json; the table and done event through `report`.
int checkLabels(const fs::path& annotations, const fs::path& results, bool results_given,
                const fs::path& image_dir, const LabelCheckOptions& options,
                const fs::path& output_dir, TaskReport& report) {
  const dataset::CocoDataset gt = dataset::loadCoco(annotations);
  for (const auto& w : gt.warnings())
    report.warn("annotation_warning", annotations.string() + ": " + w.key_path + ": " + w.message);
  std::vector<int64_t> category_ids;
  review::FinderInput input;
  for (const auto& c : gt.categories()) {
    category_ids.push_back(c.id);
    input.category_names.emplace_back(c.id, c.name);
  }
  const eval::ImageSizes sizes = eval::imageSizes(gt);
  eval::LoadedResults loaded = eval::loadResults(results, sizes, category_ids);
  for (const auto& w : loaded.warnings) {
    report.warn("results_warning", results.string() + ": [" + std::to_string(w.index) + "]: " +
                                       w.message);
  }
  input.masks = loaded.has_masks;
  const eval::EvalSet set =
      eval::groundTruthSet(gt, input.masks ? eval::IouType::Segm : eval::IouType::Bbox);
  input.image_ids = set.image_ids;
  input.annotations = set.ground_truths;
  input.detections = std::move(loaded.detections);
  if (!input.masks) {
    report.log(results.string() + " has boxes only: annotations and detections are compared by "
                                  "their boxes");
  }
  review::FinderOptions finder;
  finder.confident = options.score_threshold;
  const review::FinderResult found = review::findMistakes(input, finder);

  review::MistakesFile file;
  file.annotations = fs::absolute(annotations).lexically_normal().string();
  if (results_given) file.results = fs::absolute(results).lexically_normal().string();
  if (!image_dir.empty()) file.image_dir = fs::absolute(image_dir).lexically_normal().string();
  file.typical_overlap = found.typical_overlap;
  file.mistakes = found.mistakes;
  const fs::path json = output_dir / "mistakes.json";
  io::writeFileAtomic(json, review::mistakesJson(file));
  report.log(topTable(found, gt, options.top));
  std::map<std::string, size_t> per_kind;
  for (const review::Mistake& m : found.mistakes)
    ++per_kind[review::kindName(m.kind)];
  std::string kinds;
  for (const auto& [kind, count] : per_kind)
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " " + kind;
  report.write(train::doneEvent(
      "ok",
      std::to_string(found.mistakes.size()) + " likely mistakes on " +
          std::to_string(input.image_ids.size()) + " images" +
          (kinds.empty() ? "" : " (" + kinds + ")") + "; " + json.string(),
      report.elapsed()));
  return kExitOk;
}

int runLabelCheckFiles(const LabelCheckOptions& options, std::ostream& out, std::ostream& err) {
  const fs::path output_dir =
      options.output_dir.empty() ? besideAnnotations(options.annotations) : options.output_dir;
  const auto entry =
      TaskEntry("label_check").onFiles().eventsDir([&](const fs::path&) { return output_dir; });
  return runTask(entry, out, err, [&](TaskContext& task) {
    task.report.write(train::startEvent("label_check", "", output_dir.string(), "cpu", 1, 0, 0,
                                        MRCNN_VERSION));
    return checkLabels(options.annotations, options.results, true, options.image_dir, options,
                       output_dir, task.report);
  });
}

}  // namespace mrcnn::engine
