// Any bytes as a spec (protobuf text, TAO's string-encoded lists such as
// anchor_aspect_ratios: "[(1.0, 1.0), (1.4, 0.7)]"), alone and with a --set override taken
// from the input's last line: loadSpecText must return diagnostics, never crash, hang or read
// out of bounds; an accepted spec must print and parse back.
#include <cstdint>
#include <string>
#include <string_view>

#include "specs/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const mrcnn::spec::LoadedSpec loaded = mrcnn::spec::loadSpecText(text, "fuzz.txt", "/tmp");
  for (const auto& d : loaded.diagnostics)
    (void)d.format();
  if (loaded.ok()) {
    const std::string printed = mrcnn::spec::printResolved(loaded.spec);
    const mrcnn::spec::LoadedSpec again = mrcnn::spec::loadSpecText(printed, "printed", "/tmp");
    if (!again.ok()) __builtin_trap();  // what we print must parse back
  }
  const size_t newline = text.rfind('\n');
  if (newline != std::string_view::npos && newline + 1 < text.size()) {
    const std::string override(text.substr(newline + 1));
    (void)mrcnn::spec::loadSpecText(text.substr(0, newline), "fuzz.txt", "/tmp", {override});
  }
  return 0;
}
