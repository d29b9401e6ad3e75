// Which weights file a task runs with: the command line's, the run's last checkpoint, or the
// spec's own.
#pragma once

#include <filesystem>
#include <string>

#include "specs/spec.h"

namespace mrcnn::engine {

// The spec's own weights, relative to its folder: pruned_model_path (a pruned model, which as
// in TAO wins over checkpoint), else checkpoint. Empty when it names none. Training starts
// from them; the other tasks use them when there is no run yet.
std::filesystem::path startingWeights(const spec::LoadedSpec& loaded);

// The weights a task runs with: `checkpoint_option` (--checkpoint), else the run directory's
// last checkpoint (the checkpoints/last pointer), else the spec's (startingWeights). Empty when
// there are none; weightsSearched() then says what was looked for.
std::filesystem::path weightsFile(const std::filesystem::path& checkpoint_option,
                                  const spec::LoadedSpec& loaded,
                                  const std::filesystem::path& run_dir);
std::string weightsSearched(const std::filesystem::path& spec_path,
                            const std::filesystem::path& run_dir);

}  // namespace mrcnn::engine
