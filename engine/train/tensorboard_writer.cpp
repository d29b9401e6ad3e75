#include "engine/train/tensorboard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "specs/tensorboard.pb.h"

namespace mrcnn::train {
namespace {

// The CRC-32C table of the reflected polynomial 0x82F63B78.
const std::array<uint32_t, 256>& crcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

void appendLittleEndian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// Adds `tag` = value to the summary.
void add(tensorboard::Summary& summary, const std::string& tag, double value) {
  tensorboard::Summary::Value* v = summary.add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
}

// pycocotools' summarize() order, as the tags name them.
constexpr const char* kStatNames[12] = {"AP",  "AP50", "AP75",  "APs", "APm", "APl",
                                        "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"};

}  // namespace

uint32_t crc32c(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i)
    crc = crcTable()[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t maskedCrc32c(const void* data, std::size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create the folder: " + ec.message());
  const double now = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count()) /
                     1e6;
  file_ = dir / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." +
                 hostName() + "." + std::to_string(::getpid()));
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error(file_.string() + ": cannot create: " + std::strerror(errno));
  tensorboard::Event first;
  first.set_wall_time(now);
  first.set_file_version("brain.Event:2");
  write(first);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::write(const tensorboard::Event& event) {
  const std::string data = event.SerializeAsString();
  std::string record;
  record.reserve(data.size() + 16);
  appendLittleEndian(record, data.size(), 8);
  appendLittleEndian(record, maskedCrc32c(record.data(), 8), 4);
  record += data;
  appendLittleEndian(record, maskedCrc32c(data.data(), data.size()), 4);

  const std::lock_guard<std::mutex> lock(mutex_);
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  const ssize_t n = ::write(fd_, record.data(), record.size());
  if (n != static_cast<ssize_t>(record.size())) {
    const int error = n < 0 ? errno : ENOSPC;
    if (before >= 0 && ::ftruncate(fd_, before) != 0) {
      // The record stays torn; the reader stops before it.
    }
    throw std::runtime_error(file_.string() + ": cannot append a record: " + std::strerror(error));
  }
}

void TensorBoardWriter::scalar(const std::string& tag, double value, int64_t step,
                               double wall_time) {
  tensorboard::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  add(*e.mutable_summary(), tag, value);
  write(e);
}

void TensorBoardWriter::onEvent(const events::Event& in) {
  tensorboard::Event e;
  e.set_wall_time(in.time());
  e.set_step(static_cast<int64_t>(in.step()));
  tensorboard::Summary& s = *e.mutable_summary();
  if (in.type() == "progress") {
    if (in.has_losses()) {
      const events::Losses& l = in.losses();
      add(s, "loss/total", l.total());
      add(s, "loss/rpn_objectness", l.rpn_objectness());
      add(s, "loss/rpn_box", l.rpn_box());
      add(s, "loss/fast_rcnn_class", l.fast_rcnn_class());
      add(s, "loss/fast_rcnn_box", l.fast_rcnn_box());
      add(s, "loss/mask", l.mask());
    }
    add(s, "train/learning_rate", in.lr());
    add(s, "train/images_per_second", in.images_per_second());
    add(s, "train/data_wait_share", in.data_wait_share());
    if (in.has_memory()) {
      add(s, "memory/rss_mib", in.memory().rss_mib());
      if (in.memory().device_mib() > 0) {
        add(s, "memory/device_mib", in.memory().device_mib());
        add(s, "memory/device_peak_mib", in.memory().device_peak_mib());
      }
    }
    if (in.loss_scale() > 0) add(s, "train/loss_scale", in.loss_scale());
  } else if (in.type() == "eval") {
    for (const auto& [type, stats] :
         {std::pair{"bbox", &in.bbox()}, std::pair{"segm", &in.segm()}}) {
      for (int i = 0; i < stats->stats_size() && i < 12; ++i)
        add(s, std::string("eval/") + type + "_" + kStatNames[i], stats->stats(i));
    }
  }
  if (s.value_size() > 0) write(e);
}

}  // namespace mrcnn::train
