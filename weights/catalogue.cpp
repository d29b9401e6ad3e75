#include "weights/catalogue.h"

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "weights/embedded_resources.h"

namespace mrcnn::weights {
namespace {

namespace dom = simdjson::dom;

// The namespaces names may use. A path with a colon in it ("runs/a:b.pt") is still a path:
// only these prefixes make a name.
constexpr std::string_view kNamespaces[] = {"torchvision:"};

bool isHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// Reads the fields of one entry; every error names the entry.
class EntryReader {
 public:
  EntryReader(dom::element element, std::string where)
      : element_(element), where_(std::move(where)) {}

  std::string text(const char* key, bool required = true) const {
    dom::element v;
    if (element_.at_key(key).get(v) != simdjson::SUCCESS) {
      if (required) fail(std::string("no \"") + key + "\"");
      return {};
    }
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not a string");
    return std::string(s);
  }
  int64_t integer(const char* key, int64_t otherwise) const {
    dom::element v;
    if (element_.at_key(key).get(v) != simdjson::SUCCESS) return otherwise;
    int64_t n = 0;
    if (v.get_int64().get(n) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not an integer");
    return n;
  }
  bool boolean(const char* key, bool otherwise) const {
    dom::element v;
    if (element_.at_key(key).get(v) != simdjson::SUCCESS) return otherwise;
    bool b = false;
    if (v.get_bool().get(b) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not true or false");
    return b;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw WeightsError(where_ + ": " + what);
  }

 private:
  dom::element element_;
  std::string where_;
};

CatalogueEntry readEntry(dom::element element, const std::string& where) {
  const EntryReader r(element, where);
  CatalogueEntry e;
  e.name = r.text("name");
  if (!isCatalogueName(e.name))
    r.fail("name \"" + e.name + "\" has no namespace (\"torchvision:\")");
  e.url = r.text("url");
  const size_t slash = e.url.rfind('/');
  if (e.url.find("://") == std::string::npos || slash == std::string::npos ||
      slash + 1 == e.url.size())
    r.fail("url \"" + e.url + "\" is not an http(s) URL of a file");
  e.file_name = e.url.substr(slash + 1);
  e.sha256_prefix = r.text("sha256_prefix");
  if (!isHex(e.sha256_prefix) || e.sha256_prefix.size() < 8 || e.sha256_prefix.size() > 64)
    r.fail("sha256_prefix \"" + e.sha256_prefix + "\" is not 8 to 64 lower-case hex digits");
  // torchvision names its files <name>-<hash prefix>.<ext>: the two must agree, or one of
  // them was mistyped and every download would be refused.
  if (e.file_name.find("-" + e.sha256_prefix + ".") == std::string::npos)
    r.fail("sha256_prefix \"" + e.sha256_prefix + "\" is not the one in the file name \"" +
           e.file_name + "\"");
  const std::string kind = r.text("kind");
  if (kind == "imagenet_resnet") {
    e.kind = WeightsKind::kImageNetResNet;
  } else if (kind == "mask_rcnn") {
    e.kind = WeightsKind::kMaskRCNN;
  } else {
    r.fail("kind \"" + kind + "\" is not imagenet_resnet or mask_rcnn");
  }
  e.depth = static_cast<int>(r.integer("depth", 0));
  if (e.depth != 18 && e.depth != 34 && e.depth != 50 && e.depth != 101)
    r.fail("depth " + std::to_string(e.depth) + " is not 18, 34, 50 or 101");
  e.num_classes = static_cast<int>(r.integer("num_classes", 0));
  if (e.kind == WeightsKind::kMaskRCNN && e.num_classes < 2)
    r.fail("a mask_rcnn entry needs num_classes (2 or more)");
  e.torchvision_weights = r.text("torchvision_weights", /*required=*/false);
  e.spec_settings = r.text("spec_settings", /*required=*/false);
  e.supported = r.boolean("supported", true);
  e.reason = r.text("reason", /*required=*/false);
  if (!e.supported && e.reason.empty()) r.fail("an unsupported entry needs a \"reason\"");
  return e;
}

}  // namespace

bool isCatalogueName(std::string_view field) {
  return std::any_of(std::begin(kNamespaces), std::end(kNamespaces),
                     [&](std::string_view ns) { return field.substr(0, ns.size()) == ns; });
}

Catalogue parseCatalogue(std::string_view json, const std::string& source) {
  dom::parser parser;
  const simdjson::padded_string text(json);
  dom::element root;
  if (const auto err = parser.parse(text).get(root); err != simdjson::SUCCESS)
    throw WeightsError(source + ": not valid JSON: " + simdjson::error_message(err));
  dom::array entries;
  if (root.at_key("entries").get_array().get(entries) != simdjson::SUCCESS)
    throw WeightsError(source + ": no \"entries\" array");
  Catalogue catalogue;
  std::set<std::string> names;
  size_t index = 0;
  for (dom::element element : entries) {
    const std::string where = source + ": entry " + std::to_string(index++);
    if (!element.is_object()) throw WeightsError(where + ": not an object");
    CatalogueEntry e = readEntry(element, where);
    if (!names.insert(e.name).second)
      throw WeightsError(where + ": \"" + e.name + "\" given twice");
    catalogue.push_back(std::move(e));
  }
  return catalogue;
}

const Catalogue& builtinCatalogue() {
  static const Catalogue catalogue =
      parseCatalogue(embedded::kWeightsCatalogue, "resources/weights_catalogue.json (built in)");
  return catalogue;
}

Catalogue activeCatalogue() {
  const char* path = std::getenv("MRCNN_WEIGHTS_CATALOGUE");
  if (path == nullptr || *path == '\0') return builtinCatalogue();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw WeightsError(std::string(path) +
                       " (MRCNN_WEIGHTS_CATALOGUE): cannot read it: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parseCatalogue(text.str(), std::string(path) + " (MRCNN_WEIGHTS_CATALOGUE)");
}

const CatalogueEntry* findEntry(const Catalogue& catalogue, std::string_view name) {
  for (const CatalogueEntry& e : catalogue) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const CatalogueEntry& requireEntry(const Catalogue& catalogue, std::string_view name) {
  const CatalogueEntry* e = findEntry(catalogue, name);
  if (e == nullptr) {
    std::string known;
    for (const CatalogueEntry& c : catalogue) {
      if (!c.supported) continue;
      known += (known.empty() ? "" : ", ") + c.name;
    }
    throw WeightsError("checkpoint \"" + std::string(name) +
                       "\": no such weights in the catalogue; known names: " + known);
  }
  if (!e->supported)
    throw WeightsError("checkpoint \"" + e->name + "\" cannot be used: " + e->reason);
  return *e;
}

std::string mirroredUrl(const std::string& url, const std::string& mirror) {
  if (mirror.empty()) return url;
  if (mirror.find("://") == std::string::npos)
    throw WeightsError("MRCNN_WEIGHTS_MIRROR \"" + mirror +
                       "\" has no scheme: give it as http://host[:port][/path] or https://...");
  const size_t scheme_end = url.find("://");
  const size_t path_start = scheme_end == std::string::npos ? 0 : url.find('/', scheme_end + 3);
  const std::string path = path_start == std::string::npos ? "/" : url.substr(path_start);
  std::string base = mirror;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  return base + path;
}

std::optional<std::string> mirrorFromEnvironment() {
  const char* value = std::getenv("MRCNN_WEIGHTS_MIRROR");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace mrcnn::weights
