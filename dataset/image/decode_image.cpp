#include "dataset/image/decode_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "dataset/image/image_check.h"

namespace mrcnn::dataset {
namespace {

DecodedImage failed(std::string problem) {
  DecodedImage out;
  out.problem = std::move(problem);
  return out;
}

std::string megapixels(uint64_t pixels) {
  return std::to_string((pixels + 500'000) / 1'000'000) + " megapixels";
}

}  // namespace

DecodedImage decodeImage(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  const ImageCheck structure = checkStructure(bytes);
  // A cut file decodes to a picture whose missing part the decoder fills in: never use it.
  // Other structural oddities (bytes between markers...) are left to the decoder to judge.
  if (!structure.ok && (bytes.empty() || structure.problem.starts_with("truncated") ||
                        structure.problem.starts_with("image header"))) {
    return failed(structure.problem);
  }
  const ImageHeader& header = structure.header;
  const uint64_t pixels = uint64_t{header.width} * header.height;
  if (header.format != ImageFormat::kUnknown && pixels > options.max_pixels) {
    return failed("its header claims " + std::to_string(header.width) + "x" +
                  std::to_string(header.height) + " pixels, more than the limit of " +
                  megapixels(options.max_pixels) + " (a decompression bomb, or a corrupt header)");
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return failed("file of " + std::to_string(bytes.size()) + " bytes: too large to decode");
  DecodedImage out;
  try {
    const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1,
                      const_cast<uint8_t*>(bytes.data()));
    out.bgr = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception& e) {
    return failed("the decoder failed: " + (e.err.empty() ? std::string(e.what()) : e.err));
  } catch (const std::bad_alloc&) {
    return failed("not enough memory to decode it");
  }
  if (out.bgr.empty()) {
    return failed(header.format == ImageFormat::kUnknown
                      ? "not an image (no decoder recognises its contents)"
                      : "does not decode" +
                            (structure.ok ? std::string() : " (" + structure.problem + ")"));
  }
  if (out.bgr.type() != CV_8UC3) return failed("decodes to an unexpected pixel type");
  return out;
}

DecodedImage readImageFile(const std::filesystem::path& path, const DecodeOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(std::string("cannot read: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return failed("not a regular file");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return failed(std::string("cannot read: ") + std::strerror(err));
    }
    if (n == 0) break;  // the file shrank while read
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return decodeImage(bytes, options);
}

}  // namespace mrcnn::dataset
