#include "engine/cli_args.h"

#include <errno.h>

#include <ostream>
#include <set>

namespace mrcnn::engine {
namespace {

// Options that take a value; --set and --annotations may be repeated.
const std::set<std::string> kValueOptions = {
    "--spec", "--task", "--run-dir", "--set", "--annotations", "--results", "--iou-type",
    "--metrics-out", "--image-dir", "--output-dir", "--tag", "--num-shards", "--include-mask",
    "--images", "--out", "--checkpoint", "--overlay-threshold", "--thresholds", "--mode",
    "--steps", "--opset", "--backend", "--onnx", "--pruning-threshold", "--normalizer",
    "--equalization-criterion", "--pruning-granularity", "--min-num-filters",
    "--excluded-layers", "--format", "--input", "--split", "--seed", "--labels",
    "--score-threshold", "--top", "--out-annotations", "--folds", "--fold-steps",
    "--data_type", "--cal_image_dir", "--batches", "--cal_cache_file", "--cal_range",
    "--cal_percentile", "--bias_correction", "--tile", "--tile-overlap", "--tile-merge",
    "--tile-match-threshold", "--streams", "--count-syncs"};
// Options without a value.
const std::set<std::string> kFlags = {"--gen-ds-config", "--profile", "--copy-images",
                                      "--tile-full", "--no-overlays"};

}  // namespace

std::string CommandLine::get(const char* name) const {
  const auto it = values.find(name);
  return it == values.end() ? std::string() : it->second;
}

const char* programName() {
  return program_invocation_short_name;
}

std::optional<int64_t> wholeNumber(const std::string& text, int64_t min) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const int64_t v = std::stoll(text);
  return v >= min ? std::optional<int64_t>(v) : std::nullopt;
}

std::optional<CommandLine> parseCommandLine(const std::vector<std::string>& args,
                                            std::ostream& err, const char* usage) {
  CommandLine c;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") {
      c.help = true;
      return c;
    }
    if (a == "--version") {
      c.version = true;
      return c;
    }
    std::string value;
    bool inline_value = false;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    if (kFlags.count(a) && !inline_value) {
      if (!c.values.emplace(a, "true").second) {
        err << programName() << ": " << a << " given twice\n";
        return std::nullopt;
      }
      continue;
    }
    if (!kValueOptions.count(a)) {
      err << programName() << ": unknown argument \"" << a << "\"\n" << usage;
      return std::nullopt;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        err << programName() << ": " << a << " needs a value\n" << usage;
        return std::nullopt;
      }
      value = args[++i];
    }
    if (a == "--set") {
      c.overrides.push_back(value);
    } else if (a == "--annotations") {
      c.annotations.push_back(value);
      c.values.emplace(a, c.annotations.front());
    } else if (!c.values.emplace(a, value).second) {
      err << programName() << ": " << a << " given twice\n";
      return std::nullopt;
    }
  }
  if (c.annotations.size() > 1 && c.task() != "dataset_stats") {
    err << programName() << ": --annotations given twice\n";
    return std::nullopt;
  }
  return c;
}

}  // namespace mrcnn::engine
