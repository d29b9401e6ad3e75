#include "engine/events/tensorboard_writer.h"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "dataset/convert/crc32c.h"
#include "eval/curves.h"
#include "specs/tensorboard.pb.h"

namespace mrcnn::train {
namespace {

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

// Adds the six losses under `group` ("loss/", "val_loss/").
void addLosses(tensorboard::Summary& s, const std::string& group, const events::Losses& l) {
  add(s, group + "total", l.total());
  add(s, group + "rpn_objectness", l.rpn_objectness());
  add(s, group + "rpn_box", l.rpn_box());
  add(s, group + "fast_rcnn_class", l.fast_rcnn_class());
  add(s, group + "fast_rcnn_box", l.fast_rcnn_box());
  add(s, group + "mask", l.mask());
}

// pycocotools' summarize() order, as the tags name them.
constexpr const char* kStatNames[12] = {"AP",  "AP50", "AP75",  "APs", "APm", "APl",
                                        "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"};

constexpr int kPrThresholds = 101;  // score thresholds 0, .01, ..., 1

// One class's pr_curves summary from the metrics file's .50 curve: at each score threshold
// the last recall point its detections reach (pr_scores), its precision and recall, and the
// counts they imply for `objects` ground-truth objects (true negatives: 0).
void addPrCurve(tensorboard::Summary& summary, const std::string& tag,
                const std::vector<double>& precision, const std::vector<double>& scores,
                int64_t objects) {
  std::array<std::vector<float>, 6> rows;  // TP, FP, TN, FN, precision, recall
  for (auto& row : rows)
    row.assign(kPrThresholds, 0.0f);
  const auto g = static_cast<double>(objects);
  for (int i = 0; i < kPrThresholds; ++i) {
    const double threshold = i / static_cast<double>(kPrThresholds - 1);
    const int reached = eval::recallIndexAtScore(precision, scores, threshold);
    const double p = reached >= 0 ? precision[static_cast<size_t>(reached)] : 0.0;
    const double recall = reached >= 0 ? reached / 100.0 : 0.0;
    const double tp = recall * g;
    const double fp = p > 0 ? tp * (1 - p) / p : 0.0;
    const auto at = static_cast<size_t>(i);
    rows[0][at] = static_cast<float>(tp);
    rows[1][at] = static_cast<float>(fp);
    rows[3][at] = static_cast<float>(g - tp);
    rows[4][at] = static_cast<float>(p);
    rows[5][at] = static_cast<float>(recall);
  }
  tensorboard::Summary::Value* v = summary.add_value();
  v->set_tag(tag);
  tensorboard::PrCurvePluginData plugin;
  plugin.set_num_thresholds(kPrThresholds);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("pr_curves");
  v->mutable_metadata()->mutable_plugin_data()->set_content(plugin.SerializeAsString());
  tensorboard::TensorProto& t = *v->mutable_tensor();
  t.set_dtype(1);
  t.mutable_tensor_shape()->add_dim()->set_size(6);
  t.mutable_tensor_shape()->add_dim()->set_size(kPrThresholds);
  for (const auto& row : rows)
    for (float x : row)
      t.add_float_val(x);
}

// The PR curves of an evaluation's metrics file (pr_curves/<type>/<class name>), for the
// classes with ground truth; nothing when the file cannot be read (it is the run's own).
void addPrCurves(tensorboard::Summary& summary, const std::string& metrics_path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (metrics_path.empty() || parser.load(metrics_path).get(doc) != simdjson::SUCCESS) return;
  for (const char* type : {"bbox", "segm"}) {
    simdjson::dom::object section;
    if (doc[type].get(section) != simdjson::SUCCESS) continue;
    simdjson::dom::array ids, matrix;
    if (section["confusion"]["categories"].get(ids) != simdjson::SUCCESS ||
        section["confusion"]["matrix"].get(matrix) != simdjson::SUCCESS)
      continue;
    size_t k = 0;
    for (simdjson::dom::element id_value : ids) {
      const std::string id = std::to_string(int64_t(id_value));
      int64_t objects = 0;
      for (int64_t n : matrix.at(k++).get_array())
        objects += n;
      std::vector<double> precision, scores;
      simdjson::dom::array curve, score_curve;
      if (objects == 0 || section["pr_curves"][id]["0.50"].get(curve) != simdjson::SUCCESS ||
          section["pr_scores"][id]["0.50"].get(score_curve) != simdjson::SUCCESS)
        continue;
      for (double x : curve)
        precision.push_back(x);
      for (double x : score_curve)
        scores.push_back(x);
      std::string name = id;
      if (std::string_view n; doc["category_names"][id].get(n) == simdjson::SUCCESS) name = n;
      addPrCurve(summary, std::string("pr_curves/") + type + "/" + name, precision, scores,
                 objects);
    }
  }
}

// An evaluation's overlay PNGs as images ("eval_images/image-ID", one slider over the
// steps each); a file that cannot be read or is not a PNG is left out (they are the run's own).
void addImages(tensorboard::Summary& summary,
               const google::protobuf::RepeatedPtrField<std::string>& paths) {
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    const std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The signature, then the IHDR chunk: width and height big-endian at bytes 16 and 20.
    static constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
    if (png.size() < 24 || png.compare(0, 8, kSignature) != 0 || png.compare(12, 4, "IHDR") != 0)
      continue;
    const auto be32 = [&](size_t at) {
      uint32_t v = 0;
      for (size_t k = 0; k < 4; ++k)
        v = (v << 8) | static_cast<uint8_t>(png[at + k]);
      return static_cast<int32_t>(v);
    };
    tensorboard::Summary::Value* v = summary.add_value();
    v->set_tag("eval_images/" + std::filesystem::path(path).stem().string());
    tensorboard::Summary::Image* image = v->mutable_image();
    image->set_width(be32(16));
    image->set_height(be32(20));
    image->set_colorspace(3);
    image->set_encoded_image_string(png);
  }
}

}  // namespace

uint32_t maskedCrc32c(const void* data, std::size_t size) {
  const uint32_t crc = dataset::crc32c(data, size);
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
    if (in.has_losses()) addLosses(s, "loss/", in.losses());
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
    if (in.has_val_losses()) addLosses(s, "val_loss/", in.val_losses());
    addPrCurves(s, in.metrics_path());
    addImages(s, in.overlay_paths());
  }
  if (s.value_size() > 0) write(e);
}

}  // namespace mrcnn::train
