#include "engine/train/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>

#include "engine/events/event_writer.h"
#include "io/atomic_file.h"
#include "io/write_error.h"

namespace mrcnn::train {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kFormatVersion = 1;
constexpr std::string_view kFormatName = "mrcnn-workbench checkpoint";
constexpr std::string_view kPrefix = "model.step-";
constexpr std::string_view kSuffix = ".pt";

at::Tensor bytesTensor(const std::string& s) {
  at::Tensor t = at::empty({static_cast<int64_t>(s.size())}, at::kByte);
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string metaJson(const Checkpoint& c) {
  std::ostringstream o;
  o.precision(17);
  o << "{\"format\":" << jsonString(kFormatName) << ",\"version\":" << kFormatVersion
    << ",\"step\":" << c.step << ",\"epoch\":" << c.epoch
    << ",\"data_position\":" << c.data_position << ",\"time\":" << unixNow()
    << ",\"extra\":" << (c.extra_json.empty() ? "{}" : c.extra_json) << "}";
  return o.str();
}

at::Tensor int64Scalar(uint64_t v) {
  return at::scalar_tensor(static_cast<int64_t>(v), at::kLong);
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

void writeCheckpointStaged(const Checkpoint& c, const fs::path& file,
                           const std::function<void(std::string_view)>& fault) {
  model::StateDict state;
  for (const auto& [name, t] : c.model)
    state.emplace_back("model." + name, t);
  for (const auto& [name, t] : c.optimizer)
    state.emplace_back("optimizer." + name, t);
  for (const auto& [name, t] : c.loss_scaler)
    state.emplace_back("loss_scaler." + name, t);
  state.emplace_back("trainer.step", int64Scalar(c.step));
  state.emplace_back("trainer.epoch", int64Scalar(c.epoch));
  state.emplace_back("trainer.data_position", int64Scalar(c.data_position));
  state.emplace_back("trainer.format_version", at::scalar_tensor(kFormatVersion, at::kLong));
  if (c.world_size > 1) state.emplace_back("trainer.world_size", int64Scalar(c.world_size));
  if (c.rng.cpu.defined()) state.emplace_back("rng.cpu", c.rng.cpu);
  for (size_t i = 0; i < c.rng.cuda.size(); ++i)
    state.emplace_back("rng.cuda." + std::to_string(i), c.rng.cuda[i]);
  for (size_t r = 0; r < c.rank_rng_cpu.size(); ++r)
    state.emplace_back("rng.rank." + std::to_string(r + 1) + ".cpu", c.rank_rng_cpu[r]);
  state.emplace_back("meta.json", bytesTensor(metaJson(c)));

  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CheckpointError(dir.string() + ": cannot create the folder: " + ec.message());
  const fs::path temp = dir / ("." + file.filename().string() + ".partial");
  const auto cleanup = [&] {
    std::error_code ignored;
    fs::remove(temp, ignored);
    fs::remove(fs::path(temp.string() + ".tmp"), ignored);
  };
  try {
    model::writeStateDict(state, temp);
  } catch (const io::DiskFullError& e) {
    cleanup();
    // The task reports a full disk as such, naming the checkpoint (not its temporary name),
    // its folder and the space it needs.
    throw io::DiskFullError(file, e.neededBytes(), e.error());
  } catch (const std::exception& e) {
    cleanup();
    throw CheckpointError(file.string() + ": cannot write the checkpoint: " + e.what());
  }
  try {
    io::syncPath(temp, false);
  } catch (...) {
    cleanup();
    throw;
  }
  if (fault) fault("temporary written");
  if (::rename(temp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    cleanup();
    io::throwWriteError(file, "cannot rename into place", err);
  }
  io::syncPath(dir, /*directory=*/true);
}

std::string readSmallFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

RngState captureRng() {
  RngState s;
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.cpu = gen.get_state();
  }
  if (at::globalContext().hasCUDA()) {
    const int n = at::detail::getCUDAHooks().deviceCount();
    for (int i = 0; i < n; ++i) {
      at::Generator gen = at::globalContext().defaultGenerator(
          c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      s.cuda.push_back(gen.get_state());
    }
  }
  return s;
}

void restoreRng(const RngState& s) {
  try {
    if (s.cpu.defined()) {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(s.cpu);
    }
    if (!s.cuda.empty() && at::globalContext().hasCUDA()) {
      const int n =
          std::min<int>(static_cast<int>(s.cuda.size()), at::detail::getCUDAHooks().deviceCount());
      for (int i = 0; i < n; ++i) {
        at::Generator gen = at::globalContext().defaultGenerator(
            c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i)));
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(s.cuda[i]);
      }
    }
  } catch (const c10::Error& e) {
    throw CheckpointError(std::string("cannot restore the random generators: ") +
                          e.what_without_backtrace());
  }
}

std::optional<uint64_t> checkpointStepOf(std::string_view name) {
  if (!startsWith(name, kPrefix) || name.size() <= kPrefix.size() + kSuffix.size() ||
      name.substr(name.size() - kSuffix.size()) != kSuffix)
    return std::nullopt;
  const std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  uint64_t step = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return step;
}

std::string checkpointFileName(uint64_t step) {
  return std::string(kPrefix) + std::to_string(step) + std::string(kSuffix);
}

void writeCheckpoint(const Checkpoint& checkpoint, const fs::path& file) {
  writeCheckpointStaged(checkpoint, file, nullptr);
}

Checkpoint readCheckpoint(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw CheckpointError(file.string() + ": no such checkpoint file");
  model::StateDict state;
  try {
    state = model::readStateDict(file);
  } catch (const std::exception& e) {
    throw CheckpointError(file.string() +
                          ": not a readable checkpoint (truncated or corrupt: a copy that did not "
                          "finish, or a disk that was full?): " +
                          e.what());
  }
  Checkpoint c;
  const at::Tensor* meta = nullptr;
  const at::Tensor* version = nullptr;
  const at::Tensor *step = nullptr, *epoch = nullptr, *position = nullptr;
  for (const auto& [name, t] : state) {
    if (name == "meta.json")
      meta = &t;
    else if (name == "trainer.format_version")
      version = &t;
    else if (name == "trainer.step")
      step = &t;
    else if (name == "trainer.epoch")
      epoch = &t;
    else if (name == "trainer.data_position")
      position = &t;
    else if (startsWith(name, "model."))
      c.model.emplace_back(name.substr(6), t);
    else if (startsWith(name, "optimizer."))
      c.optimizer.emplace_back(name.substr(10), t);
    else if (startsWith(name, "loss_scaler."))
      c.loss_scaler.emplace_back(name.substr(12), t);
    else if (name == "rng.cpu")
      c.rng.cpu = t;
    else if (startsWith(name, "rng.cuda."))
      c.rng.cuda.push_back(t);
    else if (startsWith(name, "rng.rank."))
      c.rank_rng_cpu.push_back(t);
    else if (name == "trainer.world_size" && t.numel() == 1)
      c.world_size = static_cast<uint64_t>(std::max<int64_t>(1, t.item<int64_t>()));
  }
  if (meta == nullptr || version == nullptr) {
    throw CheckpointError(file.string() +
                          ": not a training checkpoint of mrcnn-workbench (no meta.json and "
                          "trainer.format_version): to start from these weights, give the file "
                          "as the spec's `checkpoint`");
  }
  const std::string meta_text(static_cast<const char*>(meta->data_ptr()),
                              static_cast<size_t>(meta->numel()));
  if (meta->scalar_type() != at::kByte || meta_text.find(kFormatName) == std::string::npos)
    throw CheckpointError(file.string() + ": meta.json does not describe a " +
                          std::string(kFormatName));
  if (version->numel() != 1 || version->item<int64_t>() > kFormatVersion ||
      version->item<int64_t>() < 1) {
    throw CheckpointError(file.string() + ": checkpoint format version " +
                          std::to_string(version->numel() == 1 ? version->item<int64_t>() : -1) +
                          "; this engine reads version " + std::to_string(kFormatVersion) +
                          " (written by a newer mrcnn-workbench?)");
  }
  const auto scalar = [&](const at::Tensor* t, const char* key) -> uint64_t {
    if (t == nullptr) throw CheckpointError(file.string() + ": no " + key);
    if (t->numel() != 1 || t->scalar_type() != at::kLong || t->item<int64_t>() < 0)
      throw CheckpointError(file.string() + ": " + key + " must be a non-negative int64 scalar");
    return static_cast<uint64_t>(t->item<int64_t>());
  };
  c.step = scalar(step, "trainer.step");
  c.epoch = scalar(epoch, "trainer.epoch");
  c.data_position = scalar(position, "trainer.data_position");
  if (c.model.empty()) throw CheckpointError(file.string() + ": holds no model.* tensors");
  if (c.rng.cpu.defined() && c.rng.cpu.scalar_type() != at::kByte)
    throw CheckpointError(file.string() + ": rng.cpu must be uint8");
  // The "extra" member is the rest of meta.json after "extra": (kept as text).
  const size_t extra_at = meta_text.find("\"extra\":");
  if (extra_at != std::string::npos && meta_text.size() >= extra_at + 9) {
    c.extra_json = meta_text.substr(extra_at + 8, meta_text.size() - (extra_at + 8) - 1);
  }
  return c;
}

CheckpointStore::CheckpointStore(fs::path dir, CheckpointStoreOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {
  if (options_.keep_last == 0) options_.keep_last = 1;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw CheckpointError(dir_.string() + ": cannot create the folder: " + ec.message());
  // What a killed save left behind: its temporary files are never valid.
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (startsWith(name, ".") &&
        (name.find(".partial") != std::string::npos || name.ends_with(".tmp"))) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
  const fs::path best_file = dir_ / "best";
  if (fs::exists(best_file, ec)) {
    std::istringstream in(readSmallFile(best_file));
    std::string name;
    double metric = 0;
    std::getline(in, name);
    const auto step = checkpointStepOf(name);
    if (step && (in >> metric)) {
      best_step_ = step;
      best_metric_ = metric;
    }
  }
}

void CheckpointStore::fault(std::string_view stage) const {
  if (options_.fault_injection) options_.fault_injection(stage);
}

void CheckpointStore::writePointer(const std::string& name, const std::string& contents) {
  io::writeFileAtomic(dir_ / name, contents, {.durable = true});
}

fs::path CheckpointStore::save(const Checkpoint& checkpoint, std::optional<double> metric) {
  const fs::path file = dir_ / checkpointFileName(checkpoint.step);
  writeCheckpointStaged(checkpoint, file, options_.fault_injection);
  fault("checkpoint renamed");
  writePointer("last", checkpointFileName(checkpoint.step) + "\n");
  fault("last written");
  if (metric) reportMetric(checkpoint.step, *metric);
  prune();
  return file;
}

bool CheckpointStore::isBetter(double metric) const {
  if (metric != metric) return false;  // NaN
  if (!best_metric_) return true;
  return options_.higher_is_better ? metric > *best_metric_ : metric < *best_metric_;
}

bool CheckpointStore::reportMetric(uint64_t step, double metric) {
  if (!isBetter(metric)) return false;
  const std::string name = checkpointFileName(step);
  std::error_code ec;
  if (!fs::exists(dir_ / name, ec)) return false;
  std::ostringstream text;
  text.precision(17);
  text << name << '\n' << metric << '\n';
  writePointer("best", text.str());
  best_step_ = step;
  best_metric_ = metric;
  return true;
}

std::optional<fs::path> CheckpointStore::last() const {
  const fs::path pointer = dir_ / "last";
  std::error_code ec;
  if (!fs::exists(pointer, ec)) return std::nullopt;
  std::string name = readSmallFile(pointer);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
    name.pop_back();
  if (!checkpointStepOf(name))
    throw CheckpointError(pointer.string() + ": does not name a checkpoint (\"" + name +
                          "\"; expected model.step-N.pt)");
  const fs::path file = dir_ / name;
  if (!fs::exists(file, ec))
    throw CheckpointError(pointer.string() + ": names " + name + ", which does not exist");
  return file;
}

std::optional<fs::path> CheckpointStore::best() const {
  if (!best_step_) return std::nullopt;
  return dir_ / checkpointFileName(*best_step_);
}

std::vector<uint64_t> CheckpointStore::steps() const {
  std::vector<uint64_t> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (const auto step = checkpointStepOf(it->path().filename().string())) out.push_back(*step);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<Checkpoint> CheckpointStore::loadLatest() const {
  if (const auto file = last()) return readCheckpoint(*file);
  const std::vector<uint64_t> all = steps();
  if (all.empty()) return std::nullopt;
  return readCheckpoint(dir_ / checkpointFileName(all.back()));
}

void CheckpointStore::prune() {
  const std::vector<uint64_t> all = steps();
  if (all.size() <= options_.keep_last) return;
  std::set<uint64_t> keep(all.end() - options_.keep_last, all.end());
  if (best_step_) keep.insert(*best_step_);
  for (uint64_t step : all) {
    if (keep.count(step)) continue;
    std::error_code ignored;
    fs::remove(dir_ / checkpointFileName(step), ignored);
  }
}

}  // namespace mrcnn::train
