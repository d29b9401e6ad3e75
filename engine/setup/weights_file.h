// Which weights file a task runs with: the command line's, the run's last checkpoint, or the
// spec's own.
#pragma once

#include <filesystem>
#include <string>

#include "engine/events/task_report.h"
#include "specs/spec.h"

namespace mrcnn::engine {

// The spec's own weights, relative to its folder: pruned_model_path (a pruned model, which as
// in TAO wins over checkpoint), else checkpoint. Empty when it names none. Training starts
// from them; the other tasks use them when there is no run yet. A checkpoint given by name
// ("torchvision:resnet50", weights/catalogue.h) is the file in the user's cache, downloaded
// there first when missing, its progress logged to `report` (when given) every few seconds.
// Throws TaskFailure (kExitBadData, "weights_unavailable") naming the URL and the path where
// the file can be put by hand when it cannot be had.
std::filesystem::path startingWeights(const spec::LoadedSpec& loaded,
                                      TaskReport* report = nullptr);

// The weights a task runs with: `checkpoint_option` (--checkpoint: a file, or a name as the
// spec's checkpoint may be), else the run directory's last checkpoint (the checkpoints/last
// pointer), else the spec's (startingWeights). Empty when there are none; weightsSearched()
// then says what was looked for.
std::filesystem::path weightsFile(const std::filesystem::path& checkpoint_option,
                                  const spec::LoadedSpec& loaded,
                                  const std::filesystem::path& run_dir,
                                  TaskReport* report = nullptr);
std::string weightsSearched(const std::filesystem::path& spec_path,
                            const std::filesystem::path& run_dir);

}  // namespace mrcnn::engine
