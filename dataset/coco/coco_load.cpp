// loadCoco: walks the top-level object of the file; its three big arrays go to the batch
// pipeline, the rest (info, licenses, unknown keys) is only checked to be JSON.
#include <simdjson.h>

#include <array>
#include <thread>

#include "dataset/coco/batch_pipeline.h"
#include "dataset/coco/coco.h"
#include "dataset/coco/dataset_builder.h"
#include "dataset/coco/json_stream.h"

namespace mrcnn::dataset {
namespace {

using coco_detail::JsonStream;
using coco_detail::Section;

// Large enough that per-batch costs vanish, small enough that simdjson's index of a batch and
// the batches in flight stay a few MB.
constexpr size_t kBatchBytes = size_t{1} << 20;

std::optional<Section> sectionOf(std::string_view key) {
  if (key == "images") return Section::kImages;
  if (key == "annotations") return Section::kAnnotations;
  if (key == "categories") return Section::kCategories;
  return std::nullopt;
}

// Values the loader does not read (info, licenses, unknown keys) must still be JSON.
void validateSkipped(const JsonStream& stream, std::string_view text, uint64_t offset) {
  simdjson::dom::parser parser;
  simdjson::dom::element ignored;
  if (const simdjson::error_code e = parser.parse(simdjson::padded_string(text)).get(ignored)) {
    stream.fail(offset, stream.path(),
                std::string("malformed JSON (") + simdjson::error_message(e) + ")");
  }
}

void walkTopLevel(JsonStream& stream, coco_detail::BatchPipeline& pipeline,
                  coco_detail::DatasetBuilder& builder) {
  int c = stream.peek();
  if (c < 0) stream.fail(0, "", "the file is empty; expected a COCO json object");
  if (c != '{') {
    stream.fail(stream.offset(), "",
                "expected a JSON object at the top level, got " + JsonStream::describeStart(c));
  }
  stream.advance();
  std::array<bool, 3> seen{};
  uint64_t sequence = 0;
  c = stream.peek();
  if (c == '}') {
    stream.advance();
  } else {
    for (;;) {
      if (c < 0) stream.truncated();
      if (c != '"') {
        stream.fail(stream.offset(), "",
                    "malformed JSON: expected a key, got " + JsonStream::describeStart(c));
      }
      const std::string key = stream.readString();
      stream.setPath(key);
      c = stream.peek();
      if (c != ':') {
        if (c < 0) stream.truncated();
        stream.fail(
            stream.offset(), key,
            "malformed JSON: expected ':' after the key, got " + JsonStream::describeStart(c));
      }
      stream.advance();
      c = stream.peek();
      if (c < 0) stream.truncated();
      const std::optional<Section> section = sectionOf(key);
      if (section && !seen[static_cast<size_t>(*section)]) {
        seen[static_cast<size_t>(*section)] = true;
        if (c != '[') {
          stream.fail(stream.offset(), key,
                      "expected an array, got " + JsonStream::describeStart(c));
        }
        stream.streamArray(*section, kBatchBytes, pipeline, sequence);
      } else {
        if (section) {
          builder.warn({CocoWarningCode::kDuplicateKey,
                        "a second \"" + key + "\" at the top level: ignored", std::nullopt,
                        std::nullopt, stream.offset(), key});
        }
        stream.skipValue(&validateSkipped);
      }
      c = stream.peek();
      if (c == ',') {
        stream.advance();
        c = stream.peek();
        continue;
      }
      if (c == '}') {
        stream.advance();
        break;
      }
      if (c < 0) stream.truncated();
      stream.fail(stream.offset(), "",
                  "malformed JSON: expected ',' or '}' after the value of \"" + key + "\", got " +
                      JsonStream::describeStart(c));
    }
  }
  stream.setPath("");
  if (stream.peek() >= 0) {
    stream.fail(stream.offset(), "", "malformed JSON: more content after the top-level object");
  }
  for (const Section s : {Section::kImages, Section::kAnnotations, Section::kCategories}) {
    if (!seen[static_cast<size_t>(s)]) {
      builder.warn({CocoWarningCode::kMissingSection,
                    std::string("no \"") + coco_detail::sectionName(s) + "\" in the file",
                    std::nullopt, std::nullopt, 0, coco_detail::sectionName(s)});
    }
  }
}

}  // namespace

CocoDataset loadCoco(const std::filesystem::path& path, const CocoLoadOptions& options) {
  const std::string display = path.string();
  JsonStream stream(path, display);
  coco_detail::DatasetBuilder builder(options.max_warnings);
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  coco_detail::BatchPipeline pipeline(builder, display, options.max_warnings,
                                      threads > 1 ? threads : 0);
  try {
    walkTopLevel(stream, pipeline, builder);
  } catch (const CocoError&) {
    // The reader's fault is behind every batch it submitted: a fault found in one of them
    // (which finish() rethrows) comes first in the file.
    pipeline.finish();
    throw;
  }
  pipeline.finish();
  return builder.finish();
}

}  // namespace mrcnn::dataset
