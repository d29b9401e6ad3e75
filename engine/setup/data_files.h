// The dataset files a spec names, made ready: the embedded shapes dataset generated (or found
// up to date) when the spec asks for it, and what a task needs checked for existence.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>

#include "specs/spec.h"

namespace mrcnn::engine {

struct DataFiles {
  std::filesystem::path train_image_dir, train_json;
  std::filesystem::path val_image_dir, val_json;
};

// Which of the spec's dataset paths a task reads. Only those are checked: a task never refuses
// a path it does not use (inference on --images runs with a spec whose datasets are on
// another machine).
struct DataNeeds {
  bool train = true;       // train_json_file and train_image_dir, where named
  bool val_json = true;    // val_json_file, where named
  bool val_images = true;  // val_image_dir, where named
};

// The spec's datasets, the shapes dataset generated (or found up to date) when asked for.
// Checks that what is named and needed exists; std::nullopt after reporting to `err` when not
// (the caller exits with kExitBadData). `out` gets one line per dataset.
std::optional<DataFiles> prepareData(const spec::LoadedSpec& loaded, std::ostream& out,
                                     std::ostream& err, const DataNeeds& needs = {});

}  // namespace mrcnn::engine
