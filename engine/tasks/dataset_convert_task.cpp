// `--task dataset_convert`: TAO's parameters (no spec; a summary printed), or a spec whose
// datasets are converted into its run directory's shards/ (events, as the other tasks speak
// them). The conversion itself lives in dataset/convert (no Torch).
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "dataset/convert/dataset_convert.h"
#include "dataset/convert/shard.h"
#include "engine/exit_codes.h"
#include "engine/events/task_report.h"
#include "engine/setup/data_files.h"
#include "engine/tasks/tasks.h"
#include "engine/events/event_writer.h"

namespace mrcnn::engine {
namespace {

constexpr const char* kConvertUsage =
    "usage: mrcnn-engine --task dataset_convert --image-dir DIR --annotations FILE.json "
    "--output-dir DIR [--tag TAG] [--num-shards N] [--include-mask true|false]\n";

std::string sizeText(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / (1 << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.1f kB", static_cast<double>(bytes) / 1024);
  }
  return text;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What a conversion did, line by line: counts read and written, problems by kind, the
// shards, the warnings and report files, the time taken.
std::vector<std::string> resultLines(const dataset::ConvertResult& r, bool include_mask) {
  std::vector<std::string> lines;
  lines.push_back("read " + plural(r.images_total, "image", "images") + " and " +
                  plural(r.annotations_total, "annotation", "annotations") + "; tag " + r.tag +
                  ", masks " + (include_mask ? "included" : "left out"));
  if (r.problem_counts.empty()) {
    lines.push_back("no problems found");
  } else {
    lines.push_back("problems (each listed in " + r.report_path.string() + "):");
    for (const std::string& line : dataset::summaryLines(r))
      lines.push_back(line);
  }
  lines.push_back("written: " + plural(r.images_written, "image", "images") + " and " +
                  plural(r.annotations_written, "annotation", "annotations") +
                  "; left out: " + plural(r.images_skipped, "image", "images") + " and " +
                  plural(r.annotations_skipped, "annotation", "annotations"));
  std::string shards =
      "shards: " + std::to_string(r.shards.size()) + " (" + sizeText(r.shard_bytes) + "): ";
  if (r.shards.size() <= 4) {
    for (size_t i = 0; i < r.shards.size(); ++i)
      shards += (i ? ", " : "") + r.shards[i].string();
  } else {
    shards += r.shards.front().string() + " ... " + r.shards.back().filename().string();
  }
  lines.push_back(shards);
  if (r.warnings_path.empty()) {
    lines.push_back("TAO warnings: none, so no " + r.tag + "_warnings.json was written");
  } else {
    lines.push_back("TAO warnings: " + r.warnings_path.string() + " (" +
                    plural(r.tao_warnings.size(), "image", "images") + ")");
  }
  lines.push_back("report: " + r.report_path.string());
  for (const auto& removed : r.removed)
    lines.push_back("removed the stale " + removed.string());
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", r.seconds);
  lines.push_back(std::string("done in ") + seconds + " s");
  return lines;
}

namespace fs = std::filesystem;

// A dataset of the spec: its tag and its files.
struct Split {
  std::string tag;
  fs::path image_dir, json;
};

// From the writer's existence on: every outcome is an event.
int convertFromSpec(const TaskOptions& options, const spec::LoadedSpec& loaded,
                    const fs::path& run_dir, TaskReport& report) {
  const std::string spec_path = options.spec_path.string();
  report.write(train::startEvent("dataset_convert", spec_path, run_dir.string(), "cpu", 1, 0, 0,
                                 MRCNN_VERSION));
  // The spec's validation catches a training set or a val_image_dir named by one field only;
  // a val_json_file without val_image_dir is valid (the validation images come from
  // validation_file_pattern's shards, or from nowhere): name the missing field unless the
  // shards are there, already converted.
  const spec::DataConfig& d = loaded.spec.data_config();
  const bool val_sharded = !d.validation_file_pattern().empty();
  if (!d.val_json_file().empty() && d.val_image_dir().empty()) {
    if (!val_sharded) {
      return report.fail("bad_spec",
                         spec_path +
                             ": data_config.val_image_dir: not set, but val_json_file is: "
                             "dataset_convert needs both to convert the val set",
                         kExitBadSpec);
    }
    report.log("val: not converted: its images are validation_file_pattern's shards (" +
               d.validation_file_pattern() + ")");
  }

  std::ostringstream data_log, data_err;
  const std::optional<DataFiles> data = prepareData(loaded, data_log, data_err);
  if (!data_log.str().empty()) report.log(data_log.str());
  if (!data) return report.fail("bad_dataset", data_err.str(), kExitBadData);
  std::vector<Split> splits;
  for (const Split& split : {Split{"train", data->train_image_dir, data->train_json},
                             Split{"val", data->val_image_dir, data->val_json}}) {
    if (!split.image_dir.empty() && !split.json.empty()) splits.push_back(split);
  }
  if (splits.empty()) {
    const bool sharded = !d.training_file_pattern().empty() || val_sharded;
    return report.fail(
        "bad_spec",
        spec_path +
            ": data_config: nothing to convert: set train_image_dir and train_json_file, "
            "val_image_dir and val_json_file, or shapes_dataset" +
            (sharded ? " (training_file_pattern and validation_file_pattern name shards that "
                       "are already converted)"
                     : ""),
        kExitBadSpec);
  }

  const fs::path output_dir = run_dir / "shards";
  std::vector<std::string> converted, warnings_files, reports;
  for (const Split& split : splits) {
    dataset::ConvertOptions convert;
    convert.image_dir = split.image_dir;
    convert.annotations = split.json;
    convert.output_dir = output_dir;
    convert.tag = split.tag;
    convert.include_mask = loaded.spec.maskrcnn_config().include_mask();
    report.log(split.tag + ": " + convert.annotations.string() + " and " +
               convert.image_dir.string() + " -> " + output_dir.string());
    // Progress for long conversions: a line every 10 seconds, nothing for short ones.
    auto last = std::chrono::steady_clock::now();
    const auto progress = [&](uint64_t done, uint64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::seconds(10)) return;
      last = now;
      report.log(split.tag + ": " + std::to_string(done) + " of " + std::to_string(total) +
                 " images");
    };
    dataset::ConvertResult result;
    try {
      result = dataset::convertDataset(convert, progress);
    } catch (const dataset::CocoError& e) {
      return report.fail("bad_dataset", e.what(), kExitBadData);
    } catch (const dataset::ConvertError& e) {
      return report.fail("bad_dataset", e.what(), kExitBadData);
    } catch (const std::exception& e) {
      return report.fail(e, "convert_failed",
                         split.tag + ": dataset_convert failed: ", kExitFailed);
    }
    std::string text = split.tag + ":";
    for (const std::string& line : resultLines(result, convert.include_mask))
      text += "\n  " + line;
    report.log(text);
    for (const auto& [kind, count] : result.problem_counts) {
      report.warn(kind, split.tag + ": " + plural(count, "problem", "problems") + " of kind " +
                            kind + "; each listed in " + result.report_path.string());
    }
    converted.push_back(split.tag + " (" + plural(result.images_written, "image", "images") + ", " +
                        plural(result.annotations_written, "annotation", "annotations") + ")");
    if (!result.warnings_path.empty()) {
      warnings_files.push_back(result.warnings_path.string() + " (" +
                               plural(result.tao_warnings.size(), "image", "images") + ")");
    }
    reports.push_back(result.report_path.string());
  }

  const auto joined = [](const std::vector<std::string>& parts) {
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i)
      text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
    return text;
  };
  std::string summary =
      "converted " + joined(converted) + " into " + output_dir.string() +
      "; TAO warnings: " + (warnings_files.empty() ? std::string("none") : joined(warnings_files)) +
      "; reports: " + joined(reports);
  report.write(train::doneEvent("ok", summary, report.elapsed()));
  return kExitOk;
}

}  // namespace

int runDatasetConvertFromSpec(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const TaskEntry entry("dataset_convert");
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    return convertFromSpec(options, task.spec(), task.run_dir, task.report);
  });
}

int runDatasetConvert(const DatasetConvertOptions& options, std::ostream& out, std::ostream& err) {
  dataset::ConvertOptions convert;
  convert.image_dir = options.image_dir;
  convert.annotations = options.annotations;
  convert.output_dir = options.output_dir;
  convert.tag = options.tag;
  std::string missing;
  for (const auto& [value, name] : {std::pair{&convert.image_dir, "--image-dir"},
                                    std::pair{&convert.annotations, "--annotations"},
                                    std::pair{&convert.output_dir, "--output-dir"}}) {
    if (value->empty()) missing += std::string(missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    err << "mrcnn-engine: dataset_convert needs " << missing << '\n' << kConvertUsage;
    return kExitUsage;
  }
  if (!options.num_shards.empty()) {
    const std::string& s = options.num_shards;
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n == 0) {
      err << "mrcnn-engine: --num-shards must be a whole number of at least 1, got \"" << s
          << "\"\n"
          << kConvertUsage;
      return kExitUsage;
    }
    convert.num_shards = n;
  }
  if (!options.include_mask.empty()) {
    const std::string& s = options.include_mask;
    if (s == "true" || s == "True" || s == "1") {
      convert.include_mask = true;
    } else if (s == "false" || s == "False" || s == "0") {
      convert.include_mask = false;
    } else {
      err << "mrcnn-engine: --include-mask must be true or false, got \"" << s << "\"\n"
          << kConvertUsage;
      return kExitUsage;
    }
  }
  if (!options.tag.empty() &&
      (options.tag.find('/') != std::string::npos || options.tag == "." || options.tag == "..")) {
    err << "mrcnn-engine: --tag must be a file name prefix without '/', got \"" << options.tag
        << "\"\n";
    return kExitUsage;
  }

  const auto entry = TaskEntry("dataset_convert").onFiles().textReport();
  return runTask(entry, out, err, [&](TaskContext&) {
    // Progress for long conversions: a line every 10 seconds, nothing for short ones.
    auto last = std::chrono::steady_clock::now();
    const auto progress = [&](uint64_t done, uint64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::seconds(10)) return;
      last = now;
      out << "  " << done << " of " << total << " images\n" << std::flush;
    };
    out << "dataset_convert: " << convert.annotations.string() << " and "
        << convert.image_dir.string() << " -> " << convert.output_dir.string() << '\n'
        << std::flush;
    const dataset::ConvertResult r = dataset::convertDataset(convert, progress);

    for (const std::string& line : resultLines(r, convert.include_mask))
      out << line << '\n';
    return kExitOk;
  });
}

}  // namespace mrcnn::engine
