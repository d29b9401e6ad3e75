// A spec's `checkpoint` made a file: a catalogue name ("torchvision:resnet50") becomes its file
// in the user's cache, downloaded there once (verified, written atomically); anything else is
// a path, relative to the spec's folder. The engine calls it where a task's starting weights
// are decided; the GUI can call it too (a "download now" button) since it needs no Torch.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "weights/catalogue.h"
#include "weights/download.h"

namespace mrcnn::weights {

// $XDG_CACHE_HOME/mrcnn-workbench/weights (XDG_CACHE_HOME when set and absolute), else
// $HOME/.cache/mrcnn-workbench/weights. Throws WeightsError when neither is set.
std::filesystem::path weightsCacheDir();

// Where `entry`'s file is, or goes, in `cache_dir`: its published file name.
std::filesystem::path cachedFile(const CatalogueEntry& entry,
                                 const std::filesystem::path& cache_dir);

struct ResolveOptions {
  DownloadOptions download;              // progress, cancellation, timeouts
  const Catalogue* catalogue = nullptr;  // null: activeCatalogue()
  std::filesystem::path cache_dir;       // empty: weightsCacheDir()
  std::optional<std::string> mirror;     // none: MRCNN_WEIGHTS_MIRROR
};

// `checkpoint_field` as a file:
//  - empty: empty;
//  - a catalogue name (isCatalogueName, looked up in activeCatalogue()): the entry's file in
//    the cache. When it is not there it is downloaded (from the mirror when one is set) and
//    verified first; when it is there, its SHA-256 is checked, so a file put there by hand is
//    taken only when it is the published one. Processes that resolve at once (the ranks of a
//    data-parallel run) take turns on a lock of the cache folder: one downloads, the others
//    then find the file.
//  - anything else: the path, relative to `spec_dir` unless absolute (the file is not checked
//    here: the loader names it when it is missing).
// Throws WeightsError (DownloadError for a failed download) whose message names the name, the
// URL, and the path where the file can be put by hand; io::DiskFullError when the cache's disk
// fills up.
std::filesystem::path resolveWeights(const std::string& checkpoint_field,
                                     const std::filesystem::path& spec_dir,
                                     const ResolveOptions& options);
// The same with DownloadOptions::fromEnvironment() and `progress`.
std::filesystem::path resolveWeights(const std::string& checkpoint_field,
                                     const std::filesystem::path& spec_dir,
                                     const ProgressFn& progress = {});

}  // namespace mrcnn::weights
