// The data loader's benchmark driver (scripts/bench_loader.py runs it beside a torchvision
// DataLoader); not a test. Prints one JSON object: images, seconds, images/s, wait share.
//
//   bench_loader (--json F --images D | --shards PATTERN | --convert F D OUT) [--workers N]
//                [--batch B] [--mode fixed|shorter_side] [--images-count N] [--no-masks]
//
// --convert runs dataset_convert on F + D into OUT (tag "bench", 4 shards) and reads those.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "dataset/convert/dataset_convert.h"
#include "dataset/loader/loader.h"
#include "dataset/loader/shard_source.h"

using namespace mrcnn::dataset;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: bench_loader (--json F --images D | --shards PATTERN | --convert F D OUT)\n"
               "       [--workers N] [--batch B] [--mode fixed|shorter_side] [--images-count N]"
               " [--no-masks]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json, images, shards, convert_json, convert_images, convert_out;
  LoaderOptions options;
  options.batch_size = 2;
  options.n_workers = 2;
  uint64_t count = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--json") {
        json = value();
      } else if (arg == "--images") {
        images = value();
      } else if (arg == "--shards") {
        shards = value();
      } else if (arg == "--convert") {
        convert_json = value();
        convert_images = value();
        convert_out = value();
      } else if (arg == "--workers") {
        options.n_workers = static_cast<uint32_t>(std::stoul(value()));
      } else if (arg == "--batch") {
        options.batch_size = static_cast<uint32_t>(std::stoul(value()));
      } else if (arg == "--mode") {
        const std::string mode = value();
        if (mode != "fixed" && mode != "shorter_side") return usage();
        options.resize_mode = mode == "fixed" ? ResizeMode::kFixed : ResizeMode::kShorterSide;
      } else if (arg == "--images-count") {
        count = std::stoull(value());
      } else if (arg == "--no-masks") {
        options.load_masks = false;
      } else {
        return usage();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_loader: %s\n", e.what());
      return usage();
    }
  }
  try {
    std::shared_ptr<const SampleSource> source;
    if (!convert_json.empty()) {
      ConvertOptions convert;
      convert.annotations = convert_json;
      convert.image_dir = convert_images;
      convert.output_dir = convert_out;
      convert.tag = "bench";
      convert.num_shards = 4;
      convert.include_mask = options.load_masks;
      convertDataset(convert);
      shards = (std::filesystem::path(convert_out) / "bench-*-of-*").string();
    }
    if (!shards.empty()) {
      source = std::make_shared<ShardSource>(shardFilesMatching(shards));
    } else if (!json.empty() && !images.empty()) {
      source = std::make_shared<CocoFolderSource>(json, images);
    } else {
      return usage();
    }
    Loader loader(source, options);
    // The first batch starts the threads and fills the queue: timed separately.
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t first = loader.next()->size();
    const auto t1 = std::chrono::steady_clock::now();
    const double wait_before = loader.stats().wait_seconds;
    uint64_t done = first;
    while (done < count)
      done += loader.next()->size();
    const auto t2 = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(t2 - t1).count();
    std::printf(
        "{\"source\": \"%s\", \"workers\": %u, \"batch\": %u, \"images\": %llu, \"seconds\": %.4f, "
        "\"images_per_s\": %.3f, \"first_batch_seconds\": %.4f, \"wait_share\": %.3f, "
        "\"warnings\": %llu}\n",
        shards.empty() ? "json+images" : "shards", options.n_workers, options.batch_size,
        static_cast<unsigned long long>(done), seconds, static_cast<double>(done - first) / seconds,
        std::chrono::duration<double>(t1 - t0).count(),
        (loader.stats().wait_seconds - wait_before) / seconds,
        static_cast<unsigned long long>(loader.stats().warnings));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loader: %s\n", e.what());
    return 1;
  }
  return 0;
}
