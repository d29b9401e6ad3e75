// What the tasks run from a spec share: loading the spec (every diagnostic reported), the run
// directory, and the dataset files the spec names (generating the embedded shapes dataset
// when it asks for it).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>

#include "engine/tasks/tasks.h"
#include "specs/spec.h"

namespace mrcnn::engine {

// Prints every diagnostic to `err`; std::nullopt when the spec has errors (the caller exits
// with kExitBadSpec).
std::optional<spec::LoadedSpec> loadSpecReporting(const TaskOptions& options, std::ostream& err);

// --run-dir, or <output_dir>/<run name> from the spec.
std::filesystem::path runDirectory(const TaskOptions& options, const spec::LoadedSpec& loaded);

struct DataFiles {
  std::filesystem::path train_image_dir, train_json;
  std::filesystem::path val_image_dir, val_json;
};

// The spec's datasets, the shapes dataset generated (or found up to date) when asked for.
// Checks that what is named exists; std::nullopt after reporting to `err` when not (the caller
// exits with kExitBadData). `out` gets one line per dataset.
std::optional<DataFiles> prepareData(const spec::LoadedSpec& loaded, std::ostream& out,
                                     std::ostream& err);

}  // namespace mrcnn::engine
