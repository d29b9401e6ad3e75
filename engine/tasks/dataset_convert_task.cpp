// `--task dataset_convert`: TAO's parameters, no spec. The conversion itself lives in
// dataset/convert (no Torch); this file checks the command line and prints the summary.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <ostream>

#include "dataset/coco/coco.h"
#include "dataset/convert/dataset_convert.h"
#include "dataset/convert/shard.h"
#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"

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

}  // namespace

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

  try {
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

    out << "read " << plural(r.images_total, "image", "images") << " and "
        << plural(r.annotations_total, "annotation", "annotations") << "; tag " << r.tag
        << ", masks " << (convert.include_mask ? "included" : "left out") << '\n';
    if (r.problem_counts.empty()) {
      out << "no problems found\n";
    } else {
      out << "problems (each listed in " << r.report_path.string() << "):\n";
      for (const std::string& line : dataset::summaryLines(r))
        out << line << '\n';
    }
    out << "written: " << plural(r.images_written, "image", "images") << " and "
        << plural(r.annotations_written, "annotation", "annotations")
        << "; left out: " << plural(r.images_skipped, "image", "images") << " and "
        << plural(r.annotations_skipped, "annotation", "annotations") << '\n';
    out << "shards: " << r.shards.size() << " (" << sizeText(r.shard_bytes) << "): ";
    if (r.shards.size() <= 4) {
      for (size_t i = 0; i < r.shards.size(); ++i)
        out << (i ? ", " : "") << r.shards[i].string();
    } else {
      out << r.shards.front().string() << " ... " << r.shards.back().filename().string();
    }
    out << '\n';
    if (r.warnings_path.empty()) {
      out << "TAO warnings: none, so no " << r.tag << "_warnings.json was written\n";
    } else {
      out << "TAO warnings: " << r.warnings_path.string() << " ("
          << plural(r.tao_warnings.size(), "image", "images") << ")\n";
    }
    out << "report: " << r.report_path.string() << '\n';
    for (const auto& removed : r.removed)
      out << "removed the stale " << removed.string() << '\n';
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", r.seconds);
    out << "done in " << seconds << " s\n";
  } catch (const dataset::CocoError& e) {
    err << "error: " << e.what() << '\n';
    return kExitBadData;
  } catch (const dataset::ConvertError& e) {
    err << "error: " << e.what() << '\n';
    return kExitBadData;
  } catch (const std::exception& e) {
    err << "error: dataset_convert failed: " << e.what() << '\n';
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace mrcnn::engine
