#include "dataset/convert/dataset_convert.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "dataset/coco/coco.h"
#include "dataset/convert/mask_extent.h"
#include "dataset/convert/shard.h"
#include "dataset/image/image_check.h"
#include "io/json_writer.h"
#include "io/atomic_file.h"

namespace fs = std::filesystem;

namespace mrcnn::dataset {
namespace {

std::string number(double v) {
  char buffer[32];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, r.ptr);
}

std::string boxText(const std::array<double, 4>& b) {
  return "[" + number(b[0]) + ", " + number(b[1]) + ", " + number(b[2]) + ", " + number(b[3]) + "]";
}

// Reads a whole file. Returns an errno value (0 on success).
int readFile(const fs::path& path, std::vector<uint8_t>& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat st {};
  int error = 0;
  if (::fstat(fd, &st) != 0) {
    error = errno;
  } else if (S_ISDIR(st.st_mode)) {
    error = EISDIR;
  } else {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (error == 0) {
      if (done == out.size()) out.resize(done + 65536);  // grew since fstat, or a pipe
      const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) error = errno;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    out.resize(done);
  }
  ::close(fd);
  return error;
}

// "<tag>-NNNNN-of-MMMMM" (or its temporary ".<that>.tmp"): the shard count MMMMM, else -1.
long shardCountOf(const std::string& name, const std::string& tag) {
  std::string_view n = name;
  if (n.size() > 5 && n.front() == '.' && n.substr(n.size() - 4) == ".tmp") {
    n = n.substr(1, n.size() - 5);
  }
  if (n.size() != tag.size() + 15 || n.substr(0, tag.size()) != tag) return -1;
  const std::string_view rest = n.substr(tag.size());  // -NNNNN-of-MMMMM
  if (rest[0] != '-' || rest.substr(6, 4) != "-of-") return -1;
  const auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(rest.substr(1, 5)) || !digits(rest.substr(10, 5))) return -1;
  return std::stol(std::string(rest.substr(10, 5)));
}

bool readerSkipped(const CocoWarning& w) {
  switch (w.code) {
    case CocoWarningCode::kBadBbox:
    case CocoWarningCode::kUnknownImageId:
    case CocoWarningCode::kUnknownCategoryId:
      return true;
    case CocoWarningCode::kMissingField:
      return w.message.ends_with(": skipped");
    default:
      return false;
  }
}

// What one worker makes of one image.
struct ImageOutcome {
  std::vector<ConvertProblem> problems;
  std::vector<int64_t> box, mask;  // TAO's warnings
  std::string payload;             // the encoded record; empty when the image is left out
  uint64_t annotations_written = 0;
  uint64_t annotations_skipped = 0;
  std::exception_ptr error;
};

class Converter {
 public:
  Converter(const ConvertOptions& options, const CocoDataset& dataset)
      : options_(options), dataset_(dataset) {}

  ImageOutcome process(uint32_t index) const {
    ImageOutcome out;
    try {
      processImage(index, out);
    } catch (...) {
      out.error = std::current_exception();
    }
    return out;
  }

 private:
  void processImage(uint32_t index, ImageOutcome& out) const {
    const CocoImage& image = dataset_.images()[index];
    const std::string file(image.file_name);
    const auto problem = [&](std::string kind, std::optional<int64_t> annotation,
                             std::string message) {
      out.problems.push_back({std::move(kind), image.id, annotation,
                              annotation ? std::string() : file, std::move(message)});
    };

    // The annotations first: their warnings do not depend on the image file.
    ShardRecord record;
    record.image_id = image.id;
    record.width = image.width;
    record.height = image.height;
    record.file_name = file;
    const double iw = image.width, ih = image.height;
    for (uint32_t k : dataset_.annotationsOfImage(index)) {
      const CocoAnnotation& a = dataset_.annotations()[k];
      const auto [x, y, w, h] = a.bbox;
      if (w <= 0 || h <= 0) {
        out.box.push_back(a.id);
        problem("bad_bbox", a.id,
                "bbox " + boxText(a.bbox) + " has a zero width or height: left out (TAO: box)");
        ++out.annotations_skipped;
        continue;
      }
      if (x + w > iw || y + h > ih) {
        out.box.push_back(a.id);
        problem("box_out_of_bounds", a.id,
                "bbox " + boxText(a.bbox) + " reaches past the image's " +
                    std::to_string(image.width) + "x" + std::to_string(image.height) +
                    ": left out (TAO: box)");
        ++out.annotations_skipped;
        continue;
      }
      ShardAnnotation s;
      s.id = a.id;
      s.category_id = a.category_id;
      s.label = a.label;
      s.iscrowd = a.iscrowd;
      s.bbox = a.bbox;
      s.area = a.area;
      if (options_.include_mask) {
        try {
          s.mask = annotationRle(dataset_, a);
        } catch (const std::invalid_argument& e) {
          problem("bad_mask", a.id,
                  std::string("segmentation does not decode: ") + e.what() + ": left out");
          ++out.annotations_skipped;
          continue;
        }
        if (s.mask.h != image.height || s.mask.w != image.width) {
          problem("bad_mask", a.id,
                  "mask of " + std::to_string(s.mask.h) + "x" + std::to_string(s.mask.w) +
                      " on an image of " + std::to_string(image.height) + "x" +
                      std::to_string(image.width) + " (height x width): left out");
          ++out.annotations_skipped;
          continue;
        }
        std::optional<ContourExtent> extent;
        try {
          extent = contourExtent(s.mask);
        } catch (const std::invalid_argument& e) {
          problem("bad_mask", a.id,
                  std::string("RLE does not cover the image: ") + e.what() + ": left out");
          ++out.annotations_skipped;
          continue;
        }
        if (maskOutsideBox(extent, a.bbox)) {
          out.mask.push_back(a.id);
          problem("mask_outside_box", a.id,
                  "mask spans x " + number(extent->min_x) + ".." + number(extent->max_x) + ", y " +
                      number(extent->min_y) + ".." + number(extent->max_y) + ", beyond bbox " +
                      boxText(a.bbox) + " grown by 1: kept (TAO: mask)");
        }
      }
      record.annotations.push_back(std::move(s));
    }

    // The image file.
    const fs::path path = options_.image_dir / file;
    const auto leaveOut = [&](const char* kind, const std::string& why) {
      problem(kind, std::nullopt,
              why + "; left out with its " + std::to_string(record.annotations.size()) +
                  " annotations");
      out.annotations_skipped += record.annotations.size();
    };
    const int error = readFile(path, record.image_bytes);
    if (error == ENOENT || error == ENOTDIR) {
      leaveOut("image_missing", path.string() + " does not exist");
      return;
    }
    if (error != 0) {
      leaveOut("image_unreadable", std::string("cannot be read: ") + std::strerror(error));
      return;
    }
    const ImageCheck check = checkImage(record.image_bytes);
    if (!check.ok) {
      leaveOut("image_corrupt", check.problem);
      return;
    }
    if (check.header.width != image.width || check.header.height != image.height) {
      leaveOut("image_size_mismatch", "the file is " + std::to_string(check.header.width) + "x" +
                                          std::to_string(check.header.height) + ", the json says " +
                                          std::to_string(image.width) + "x" +
                                          std::to_string(image.height));
      return;
    }
    out.annotations_written = record.annotations.size();
    encodeShardRecord(record, options_.include_mask, out.payload);
  }

  const ConvertOptions& options_;
  const CocoDataset& dataset_;
};

// Runs Converter::process over all images on worker threads and hands the outcomes to
// `consume` in image order, from the calling thread; at most `window` outcomes wait.
class OrderedPool {
 public:
  OrderedPool(const Converter& converter, uint32_t count, unsigned threads)
      : converter_(converter), count_(count), window_(std::max(8u, 4 * threads)) {
    slots_.resize(window_);
    for (unsigned t = 0; t < threads; ++t)
      workers_.emplace_back([this] { work(); });
  }
  ~OrderedPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    consumed_.notify_all();
    for (std::thread& t : workers_)
      t.join();
  }

  ImageOutcome take(uint32_t index) {
    std::unique_lock lock(mutex_);
    std::optional<ImageOutcome>& slot = slots_[index % window_];
    produced_.wait(lock, [&] { return slot.has_value(); });
    ImageOutcome outcome = std::move(*slot);
    slot.reset();
    taken_ = index + 1;
    lock.unlock();
    consumed_.notify_all();
    return outcome;
  }

 private:
  void work() {
    while (true) {
      uint32_t index = 0;
      {
        std::unique_lock lock(mutex_);
        consumed_.wait(lock, [&] { return stop_ || next_ >= count_ || next_ < taken_ + window_; });
        if (stop_ || next_ >= count_) return;
        index = next_++;
      }
      ImageOutcome outcome = converter_.process(index);
      {
        std::lock_guard lock(mutex_);
        slots_[index % window_] = std::move(outcome);
      }
      produced_.notify_all();
    }
  }

  const Converter& converter_;
  const uint32_t count_;
  const uint32_t window_;
  std::mutex mutex_;
  std::condition_variable produced_, consumed_;
  std::vector<std::optional<ImageOutcome>> slots_;
  uint32_t next_ = 0;
  uint32_t taken_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

void validateTag(const std::string& tag) {
  if (tag.empty() || tag == "." || tag == ".." || tag.find('/') != std::string::npos ||
      tag.find('\0') != std::string::npos) {
    throw ConvertError("tag \"" + tag + "\" cannot name files (it must be non-empty, without '/')");
  }
}

}  // namespace

std::string defaultTag(const fs::path& annotations) {
  return annotations.stem().string();
}

ConvertResult convertDataset(const ConvertOptions& options, const ConvertProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  ConvertResult result;
  result.tag = options.tag.empty() ? defaultTag(options.annotations) : options.tag;
  validateTag(result.tag);
  if (options.num_shards == 0) throw ConvertError("the number of shards must be at least 1");
  std::error_code ec;
  if (!fs::is_directory(options.image_dir, ec)) {
    throw ConvertError(
        "image folder " + options.image_dir.string() +
        (fs::exists(options.image_dir, ec) ? " is not a folder" : " does not exist"));
  }
  const unsigned threads =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const CocoDataset dataset =
      loadCoco(options.annotations,
               {.threads = threads, .max_warnings = std::numeric_limits<size_t>::max()});
  if (!fs::create_directories(options.output_dir, ec) && ec) {
    throw ConvertError("cannot create the output folder " + options.output_dir.string() + ": " +
                       ec.message());
  }
  if (!fs::is_directory(options.output_dir, ec)) {
    throw ConvertError("the output folder " + options.output_dir.string() + " is not a folder");
  }

  const auto images = dataset.images();
  result.images_total = images.size();
  result.annotations_total = dataset.annotations().size();

  // The reader's warnings, in file order; its skipped bad boxes are TAO "box" warnings too.
  std::unordered_map<int64_t, TaoWarning> tao;
  for (const CocoWarning& w : dataset.warnings()) {
    if (w.code == CocoWarningCode::kBadBbox && w.image_id && w.annotation_id) {
      tao[*w.image_id].box.push_back(*w.annotation_id);
    }
    if (readerSkipped(w)) ++result.annotations_skipped;
    result.problems.push_back({std::string(warningName(w.code)), w.image_id, w.annotation_id, "",
                               w.key_path.empty() ? w.message : w.key_path + ": " + w.message});
  }
  const auto categories = dataset.categories();
  if (!categories.empty() && categories.front().id != 1) {
    result.problems.push_back(
        {"category_ids_not_from_1", std::nullopt, std::nullopt, "",
         "category ids start at " + std::to_string(categories.front().id) +
             ", not 1 (TAO's dataset_convert refuses a category id 0); labels are given in id "
             "order from 1 all the same"});
  }

  ShardInfo info;
  info.has_masks = options.include_mask;
  for (const CocoCategory& c : categories)
    info.categories.push_back({c.id, c.name});
  const auto shard_count = static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(options.num_shards, images.size())));
  info.shard_count = shard_count;
  std::vector<std::unique_ptr<ShardWriter>> writers;
  for (uint32_t s = 0; s < shard_count; ++s) {
    info.shard_index = s;
    writers.push_back(std::make_unique<ShardWriter>(
        options.output_dir / shardFileName(result.tag, s, shard_count), info));
  }

  {
    const Converter converter(options, dataset);
    const auto count = static_cast<uint32_t>(images.size());
    OrderedPool pool(converter, count, threads);
    for (uint32_t i = 0; i < count; ++i) {
      ImageOutcome outcome = pool.take(i);
      if (outcome.error) std::rethrow_exception(outcome.error);
      if (!outcome.box.empty() || !outcome.mask.empty()) {
        TaoWarning& w = tao[images[i].id];
        w.box.insert(w.box.end(), outcome.box.begin(), outcome.box.end());
        w.mask.insert(w.mask.end(), outcome.mask.begin(), outcome.mask.end());
      }
      for (ConvertProblem& p : outcome.problems)
        result.problems.push_back(std::move(p));
      result.annotations_written += outcome.annotations_written;
      result.annotations_skipped += outcome.annotations_skipped;
      if (outcome.payload.empty()) {
        ++result.images_skipped;
      } else {
        writers[i % shard_count]->addEncoded(outcome.payload);
        ++result.images_written;
      }
      if (progress) progress(i + 1, count);
    }
  }

  for (auto& w : writers)
    w->finish();
  for (auto& w : writers) {
    w->commit();
    result.shards.push_back(w->path());
    result.shard_bytes += w->bytesWritten();
  }

  // TAO's warnings in the json's image order; ids of unknown images last, ascending.
  for (const CocoImage& image : images) {
    const auto it = tao.find(image.id);
    if (it == tao.end()) continue;
    result.tao_warnings.emplace_back(image.id, std::move(it->second));
    tao.erase(it);
  }
  std::vector<std::pair<int64_t, TaoWarning>> rest(tao.begin(), tao.end());
  std::sort(rest.begin(), rest.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& r : rest)
    result.tao_warnings.push_back(std::move(r));
  for (auto& [id, w] : result.tao_warnings) {
    std::sort(w.box.begin(), w.box.end());
    std::sort(w.mask.begin(), w.mask.end());
  }
  for (const ConvertProblem& p : result.problems)
    ++result.problem_counts[p.kind];

  // Stale files of the tag: shards of another count, and the temporary files of any.
  for (const fs::directory_entry& entry : fs::directory_iterator(options.output_dir)) {
    const std::string name = entry.path().filename().string();
    const long n = shardCountOf(name, result.tag);
    if (n < 0 || (n == shard_count && name.front() != '.')) continue;
    if (fs::remove(entry.path(), ec)) result.removed.push_back(entry.path());
  }
  std::sort(result.removed.begin(), result.removed.end());
  const fs::path warnings = options.output_dir / (result.tag + "_warnings.json");
  if (!result.tao_warnings.empty()) {
    io::writeFileAtomic(warnings, taoWarningsJson(result.tao_warnings));
    result.warnings_path = warnings;
  } else if (fs::remove(warnings, ec)) {
    result.removed.push_back(warnings);
  }
  result.report_path = options.output_dir / (result.tag + "_report.json");
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  io::writeFileAtomic(result.report_path, reportJson(result));
  return result;
}

std::string taoWarningsJson(const std::vector<std::pair<int64_t, TaoWarning>>& warnings) {
  const auto list = [](const std::vector<int64_t>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i)
      s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
  };
  std::string s = "{";
  for (size_t i = 0; i < warnings.size(); ++i) {
    const auto& [id, w] = warnings[i];
    s += (i ? ", \"" : "\"") + std::to_string(id) + "\": {\"box\": " + list(w.box) +
         ", \"mask\": " + list(w.mask) + "}";
  }
  return s + "}";
}

std::string reportJson(const ConvertResult& result) {
  std::ostringstream text;
  io::JsonWriter json(text);
  json.beginObject().key("summary").beginObject();
  for (const auto& [kind, count] : result.problem_counts)
    json.key(kind).value(count);
  json.endObject().key("problems").beginArray();
  const auto id = [&](const std::optional<int64_t>& v) -> io::JsonWriter& {
    return v ? json.value(*v) : json.value(nullptr);
  };
  for (const ConvertProblem& p : result.problems) {
    json.beginObject().key("kind").value(p.kind).key("image_id");
    id(p.image_id).key("annotation_id");
    id(p.annotation_id).key("file").value(p.file).key("message").value(p.message).endObject();
  }
  json.endArray().endObject();
  text << '\n';
  return text.str();
}

std::vector<std::string> summaryLines(const ConvertResult& result) {
  struct Phrase {
    const char* kind;
    const char* one;
    const char* many;
  };
  static constexpr Phrase kPhrases[] = {
      {"image_missing", "image missing", "images missing"},
      {"image_unreadable", "image unreadable", "images unreadable"},
      {"image_corrupt", "image corrupt", "images corrupt"},
      {"image_size_mismatch", "image of a size other than the json's",
       "images of a size other than the json's"},
      {"box_out_of_bounds", "box out of its image (TAO box warning, left out)",
       "boxes out of their image (TAO box warnings, left out)"},
      {"bad_bbox", "box missing or of zero or negative size (TAO box warning, left out)",
       "boxes missing or of zero or negative size (TAO box warnings, left out)"},
      {"mask_outside_box", "mask outside its box (TAO mask warning, kept)",
       "masks outside their box (TAO mask warnings, kept)"},
      {"bad_mask", "mask that cannot be used (left out)", "masks that cannot be used (left out)"},
  };
  // Ours in the order above (images, then TAO's kinds), then the reader's by name.
  std::vector<std::pair<std::string, uint64_t>> kinds;
  for (const Phrase& p : kPhrases) {
    if (const auto it = result.problem_counts.find(p.kind); it != result.problem_counts.end())
      kinds.emplace_back(*it);
  }
  for (const auto& entry : result.problem_counts) {
    if (std::none_of(std::begin(kPhrases), std::end(kPhrases),
                     [&](const Phrase& p) { return entry.first == p.kind; }))
      kinds.push_back(entry);
  }
  std::vector<std::string> lines;
  for (const auto& entry : kinds) {
    const std::string& kind = entry.first;
    const uint64_t count = entry.second;
    const auto first = std::find_if(result.problems.begin(), result.problems.end(),
                                    [&](const ConvertProblem& p) { return p.kind == kind; });
    std::string where;
    if (!first->file.empty()) {
      where = first->file;
      if (kind != "image_missing")
        where += ": " + first->message.substr(0, first->message.find("; left out"));
    } else if (first->annotation_id) {
      where = "annotation " + std::to_string(*first->annotation_id) +
              (first->image_id ? " of image " + std::to_string(*first->image_id) : "");
    } else if (first->image_id) {
      where = "image " + std::to_string(*first->image_id);
    } else {
      where = first->message;
    }
    std::string what;
    for (const Phrase& p : kPhrases) {
      if (kind == p.kind) what = count == 1 ? p.one : p.many;
    }
    if (kind == "category_ids_not_from_1") {
      lines.push_back("  " + first->message);
      continue;
    }
    if (what.empty()) {  // the reader's kinds: their name, and the first message
      what = kind;
      std::replace(what.begin(), what.end(), '_', ' ');
      where += ": " + first->message;
    }
    lines.push_back("  " + std::to_string(count) + " " + what + " (first: " + where + ")");
  }
  return lines;
}

}  // namespace mrcnn::dataset
