// Shard files (dataset_convert's output) as the loader reads them. The first byte picks how
// the rest is used: even, as the whole file (headers, index, trailer: a damaged file); odd,
// as record payloads framed by ShardWriter with correct sizes and checksums (so that the
// record decoder itself is reached, not only the checksum test). ShardReader must throw
// ShardError or return records; never crash, hang or read out of bounds.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "dataset/convert/shard.h"

namespace {

std::filesystem::path workFile() {
  static const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                            ("fuzz_shard_" + std::to_string(::getpid())) /
                                            "train-00000-of-00001";
  std::filesystem::create_directories(path.parent_path());
  return path;
}

void readAll(const std::filesystem::path& path) {
  try {
    mrcnn::dataset::ShardReader reader(path);
    mrcnn::dataset::ShardRecord record;
    for (size_t i = 0; i < reader.size(); ++i) {
      try {
        reader.read(i, record);
      } catch (const mrcnn::dataset::ShardError&) {
      }
    }
  } catch (const mrcnn::dataset::ShardError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::filesystem::path path = workFile();
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) == 0) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(rest.data(), rest.size());
  } else {
    mrcnn::dataset::ShardInfo info;
    info.has_masks = (data[0] & 2) != 0;
    info.categories = {{1, "one"}, {7, "seven"}};
    mrcnn::dataset::ShardWriter writer(path, info);
    // Payloads separated by the byte sequence "\xff\x00\xff": several records a file.
    size_t start = 0;
    while (start <= rest.size()) {
      size_t end = rest.find(std::string_view("\xff\x00\xff", 3), start);
      if (end == std::string_view::npos) end = rest.size();
      writer.addEncoded(rest.substr(start, end - start));
      start = end + 3;
    }
    writer.finish();
    writer.commit();
  }
  readAll(path);
  return 0;
}
