#include "engine/model/state_dict.h"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "io/write_error.h"

namespace mrcnn::model {

namespace {

void collect(const torch::nn::Module& module, const std::string& prefix, StateDict& out) {
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    out.emplace_back(prefix + p.key(), p.value().detach());
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    out.emplace_back(prefix + b.key(), b.value().detach());
  for (const auto& c : module.named_children())
    collect(*c.value(), prefix + c.key() + ".", out);
}

std::string shapeOf(const at::Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void listProblems(std::ostringstream& os, const char* what, const std::vector<std::string>& items) {
  constexpr size_t kShown = 12;
  for (size_t i = 0; i < items.size() && i < kShown; ++i)
    os << "\n  " << what << items[i];
  if (items.size() > kShown) os << "\n  ... and " << items.size() - kShown << " more " << what;
}

}  // namespace

StateDict stateDictOf(const torch::nn::Module& module, const std::string& prefix) {
  StateDict out;
  collect(module, prefix, out);
  return out;
}

namespace {

// The pickle torch.save writes for a dict of tensors (protocol 2): every tensor as
// torch._utils._rebuild_tensor_v2 over a storage in the archive's record data/<i>. Only
// globals that torch.load(weights_only=True) allows. (torch::pickle_save wraps the dict in
// torch.jit._pickle.restore_type_tag, which weights_only refuses.)
class StatePickler {
 public:
  void op(char c) { out_.push_back(c); }
  void global(const char* module, const char* name) {
    op('c');
    out_ += module;
    op('\n');
    out_ += name;
    op('\n');
  }
  void text(const std::string& s) {
    op('X');
    const auto n = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i)
      out_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out_ += s;
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      const auto u = static_cast<uint32_t>(static_cast<int32_t>(v));
      for (int i = 0; i < 4; ++i)
        out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
    } else {
      op(static_cast<char>(0x8a));  // LONG1
      out_.push_back(8);
      const auto u = static_cast<uint64_t>(v);
      for (int i = 0; i < 8; ++i)
        out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
    }
  }
  void ints(at::IntArrayRef values) {
    op('(');
    for (int64_t v : values)
      integer(v);
    op('t');
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

const char* storageName(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "FloatStorage";
    case at::kDouble:
      return "DoubleStorage";
    case at::kHalf:
      return "HalfStorage";
    case at::kBFloat16:
      return "BFloat16Storage";
    case at::kLong:
      return "LongStorage";
    case at::kInt:
      return "IntStorage";
    case at::kShort:
      return "ShortStorage";
    case at::kChar:
      return "CharStorage";
    case at::kByte:
      return "ByteStorage";
    case at::kBool:
      return "BoolStorage";
    default:
      return nullptr;
  }
}

}  // namespace

void writeStateDict(const StateDict& state, const std::filesystem::path& file) {
  std::vector<at::Tensor> tensors;
  StatePickler p;
  p.op(static_cast<char>(0x80));  // PROTO 2
  p.op(2);
  p.op('}');  // a plain dict: load_state_dict takes it like the OrderedDict of state_dict()
  p.op('(');
  for (const auto& [name, value] : state) {
    const at::Tensor t = value.detach().cpu().contiguous();
    const char* storage = storageName(t.scalar_type());
    if (storage == nullptr)
      throw StateDictError(file.string() + ": cannot write " + name + " of type " +
                           std::string(c10::toString(t.scalar_type())));
    p.text(name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.op('(');
    p.op('(');  // the persistent id of the storage
    p.text("storage");
    p.global("torch", storage);
    p.text(std::to_string(tensors.size()));
    p.text("cpu");
    p.integer(t.numel());
    p.op('t');
    p.op('Q');
    p.integer(0);  // storage offset
    p.ints(t.sizes());
    p.ints(t.strides());
    p.op(static_cast<char>(0x89));           // requires_grad False
    p.global("collections", "OrderedDict");  // backward hooks
    p.op(')');
    p.op('R');
    p.op('t');
    p.op('R');
    tensors.push_back(t);
  }
  p.op('u');
  p.op('.');
  const std::string pickle = p.take();

  // What the zip will take: the records, their 64-byte alignment and local and central
  // headers (a few hundred bytes a record at most).
  uint64_t needed = pickle.size() + 4096;
  for (const at::Tensor& t : tensors)
    needed += t.nbytes() + 256;
  io::requireFreeSpace(file, needed);

  std::filesystem::path tmp = file;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io::throwWriteError(tmp, "cannot create the file", errno, needed);
  // The writer must never see a failed write: PyTorchStreamWriter then throws, and throws
  // again from its destructor (std::terminate). A failure is remembered, the rest of the
  // output dropped, and reported once the writer is done.
  int failed = 0;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
      const char* bytes = static_cast<const char*>(data);
      size_t left = failed == 0 ? size : 0;
      while (left > 0) {
        const ssize_t n = ::write(fd, bytes, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          failed = n < 0 ? errno : ENOSPC;  // a short write to a regular file: out of space
          break;
        }
        bytes += n;
        left -= static_cast<size_t>(n);
      }
      return size;
    });
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    writer.writeRecord("byteorder", "little", 6);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor& t = tensors[i];
      writer.writeRecord("data/" + std::to_string(i), t.const_data_ptr(), t.nbytes());
    }
    writer.writeEndOfFile();
  }
  if (::close(fd) != 0 && failed == 0) failed = errno;
  if (failed != 0) {
    ::unlink(tmp.c_str());
    io::throwWriteError(file, "cannot write the file", failed, needed);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    io::throwWriteError(file, "cannot rename into place", ec.value());
  }
}

LoadReport loadStateDict(torch::nn::Module& module, const StateDict& state,
                         const LoadOptions& options) {
  // The module's tensors by name.
  std::map<std::string, at::Tensor> ours;
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    ours[p.key()] = p.value();
  for (const auto& b : module.named_buffers(/*recurse=*/true))
    ours[b.key()] = b.value();

  // The file's keys under the prefix, by name relative to the module; legacy names are
  // renamed unless the file also holds the current name.
  std::unordered_map<std::string, std::string> renamed;
  for (const auto& [old_name, new_name] : options.legacy_names)
    renamed[old_name] = new_name;
  std::map<std::string, std::pair<std::string, at::Tensor>> theirs;  // name -> (file key, tensor)
  std::vector<std::pair<std::string, std::pair<std::string, at::Tensor>>> legacy;
  for (const auto& [key, tensor] : state) {
    if (key.compare(0, options.prefix.size(), options.prefix) != 0) continue;
    const std::string name = key.substr(options.prefix.size());
    if (auto it = renamed.find(name); it != renamed.end()) {
      legacy.push_back({it->second, {key, tensor}});
    } else {
      theirs[name] = {key, tensor};
    }
  }
  for (auto& [name, entry] : legacy)
    theirs.emplace(name, entry);

  LoadReport report;
  std::vector<std::string> mismatched;
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : ours) {
    const auto it = theirs.find(name);
    if (it == theirs.end()) {
      // As torchvision's BatchNorm: a file without the counter keeps the module's.
      if (!endsWith(name, ".num_batches_tracked"))
        report.missing.push_back(options.prefix + name + " (expected shape " + shapeOf(tensor) +
                                 ")");
      continue;
    }
    const auto& [key, value] = it->second;
    used.insert(name);
    if (value.sizes() != tensor.sizes()) {
      mismatched.push_back(key + ": the file has " + shapeOf(value) + ", the model expects " +
                           shapeOf(tensor));
      continue;
    }
    tensor.copy_(value);
    ++report.loaded;
  }
  for (const auto& [name, entry] : theirs) {
    if (used.count(name)) continue;
    // A frozen batch norm has no counter; torchvision's FrozenBatchNorm2d drops it too.
    if (endsWith(name, ".num_batches_tracked")) {
      const std::string base =
          name.substr(0, name.size() - std::string("num_batches_tracked").size());
      if (ours.count(base + "running_mean")) continue;
    }
    report.unexpected.push_back(entry.first + " " + shapeOf(entry.second));
  }

  const bool fail = !mismatched.empty() ||
                    (options.strict && (!report.missing.empty() || !report.unexpected.empty()));
  if (fail) {
    std::ostringstream os;
    os << options.source << ": does not fit the model";
    if (!options.prefix.empty()) os << " (keys under \"" << options.prefix << "\")";
    os << ":";
    listProblems(os, "shape mismatch for ", mismatched);
    if (options.strict) {
      listProblems(os, "missing key ", report.missing);
      listProblems(os, "unexpected key ", report.unexpected);
    }
    throw StateDictError(os.str());
  }
  return report;
}

}  // namespace mrcnn::model
