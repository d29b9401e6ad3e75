// The weights a spec may name instead of a file (checkpoint: "torchvision:resnet50"): the
// catalogue resources/weights_catalogue.json, compiled in. Each entry says where the file is
// published, the sha256 prefix it must have (the one torchvision puts in the file name, which
// torch.hub checks too) and which model it fits. No Torch, no Qt: the engine resolves names
// with it, the GUI lists them.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::weights {

// What a catalogue name or a download cannot give: the message names the name, the URL or the
// file, and what to do.
class WeightsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class WeightsKind {
  kImageNetResNet,  // a torchvision ResNet classifier's state_dict: the backbone body only
  kMaskRCNN,        // a whole torchvision Mask R-CNN state_dict
};

struct CatalogueEntry {
  std::string name;           // "torchvision:resnet50"
  std::string url;            // as published (before MRCNN_WEIGHTS_MIRROR)
  std::string file_name;      // the URL's last segment: the file's name in the cache
  std::string sha256_prefix;  // lower-case hex, the first characters of the file's sha256
  WeightsKind kind = WeightsKind::kImageNetResNet;
  int depth = 0;                    // the ResNet depth (maskrcnn_config.nlayers) it fits
  int num_classes = 0;              // kMaskRCNN: its predictor's classes (background included)
  std::string torchvision_weights;  // torchvision's enum, e.g. "ResNet50_Weights.IMAGENET1K_V1"
  std::string spec_settings;  // the spec settings it was trained with, as spec text; may be empty
  bool supported = true;      // false: listed so that asking for it says why not (`reason`)
  std::string reason;
};

using Catalogue = std::vector<CatalogueEntry>;

// Whether a checkpoint field names catalogue weights rather than a file: it starts with a
// namespace the catalogue uses ("torchvision:"). Checked lexically, so the spec's validation
// and the path anchoring can tell a name from a path without reading the catalogue.
bool isCatalogueName(std::string_view checkpoint_field);

// Parses catalogue JSON text (the format of resources/weights_catalogue.json). Throws
// WeightsError naming `source` and the entry (index and name): malformed JSON, a missing or
// mistyped field, an unknown kind, a hash prefix that is not hex or is not the one in the
// URL's file name, a name without a namespace or given twice.
Catalogue parseCatalogue(std::string_view json, const std::string& source);

// The catalogue compiled into the program (parsed once).
const Catalogue& builtinCatalogue();

// The catalogue names resolve through: the file MRCNN_WEIGHTS_CATALOGUE names when set (a site's
// own list of weights, or a test's; the same format, read at each call), else the built-in
// one. Throws WeightsError naming the file when it cannot be read or parsed.
Catalogue activeCatalogue();

// The entry of `name`, or nullptr.
const CatalogueEntry* findEntry(const Catalogue& catalogue, std::string_view name);

// The entry of `name`; throws WeightsError when the catalogue has none (listing the names it
// has) or when the entry is not supported (its reason).
const CatalogueEntry& requireEntry(const Catalogue& catalogue, std::string_view name);

// `url` with its scheme and host (and port) replaced by `mirror` ("http://host:8000" or
// "https://mirror.example.org/pytorch": a path in the mirror is kept before the URL's path).
// An empty mirror returns the URL unchanged. Throws WeightsError for a mirror without a
// scheme ("host:port" alone).
std::string mirroredUrl(const std::string& url, const std::string& mirror);

// The value of MRCNN_WEIGHTS_MIRROR, or none when unset or empty.
std::optional<std::string> mirrorFromEnvironment();

}  // namespace mrcnn::weights
