// readStateDict: the zip archive of torch.save and a small unpickler for the objects a
// state_dict file holds (OrderedDict, tensors rebuilt from storages, strings, numbers,
// tuples). Anything else in the file is reported, not guessed at.
#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "engine/model/state_dict.h"

namespace mrcnn::model {

namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    String,
    Global,
    Tuple,
    List,
    Dict,
    Tensor,
    Storage,
    Mark
  };
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0.0;
  std::string text;  // String; Global: "module name"
  std::vector<ValuePtr> items;
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;
  at::Tensor tensor;  // Tensor; Storage: its flat contents
};

ValuePtr make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

const char* kindName(Value::Kind k) {
  switch (k) {
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return "a bool";
    case Value::Kind::Int:
      return "an int";
    case Value::Kind::Float:
      return "a float";
    case Value::Kind::String:
      return "a string";
    case Value::Kind::Global:
      return "a Python class";
    case Value::Kind::Tuple:
      return "a tuple";
    case Value::Kind::List:
      return "a list";
    case Value::Kind::Dict:
      return "a dict";
    case Value::Kind::Tensor:
      return "a tensor";
    case Value::Kind::Storage:
      return "a storage";
    case Value::Kind::Mark:
      return "a mark";
  }
  return "?";
}

std::optional<at::ScalarType> storageType(const std::string& global) {
  static const std::unordered_map<std::string, at::ScalarType> types = {
      {"torch FloatStorage", at::kFloat}, {"torch DoubleStorage", at::kDouble},
      {"torch HalfStorage", at::kHalf},   {"torch BFloat16Storage", at::kBFloat16},
      {"torch LongStorage", at::kLong},   {"torch IntStorage", at::kInt},
      {"torch ShortStorage", at::kShort}, {"torch CharStorage", at::kChar},
      {"torch ByteStorage", at::kByte},   {"torch BoolStorage", at::kBool},
  };
  const auto it = types.find(global);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

class Unpickler {
 public:
  Unpickler(std::string pickle, caffe2::serialize::PyTorchStreamReader& zip, std::string source)
      : data_(std::move(pickle)), zip_(zip), source_(std::move(source)) {}

  ValuePtr run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80:
          byte();
          break;  // PROTO
        case 0x95:
          bytes(8);
          break;  // FRAME
        case '.':
          return pop();  // STOP
        case '(':
          push(make(Value::Kind::Mark));
          break;
        case 'N':
          push(make(Value::Kind::None));
          break;
        case 0x88:
          push(boolean(true));
          break;  // NEWTRUE
        case 0x89:
          push(boolean(false));
          break;  // NEWFALSE
        case 'K':
          push(integer(byte()));
          break;  // BININT1
        case 'M':
          push(integer(le(2)));
          break;  // BININT2
        case 'J':
          push(integer(static_cast<int32_t>(le(4))));
          break;  // BININT
        case 0x8a:
          push(integer(long1()));
          break;  // LONG1
        case 'G':
          push(real());
          break;  // BINFLOAT
        case 'X':
          push(string(bytes(le(4))));
          break;  // BINUNICODE
        case 0x8c:
          push(string(bytes(byte())));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push(string(bytes(le(8))));
          break;     // BINUNICODE8
        case 'c': {  // GLOBAL
          auto g = make(Value::Kind::Global);
          g->text = line();
          g->text += " " + line();
          push(g);
          break;
        }
        case 0x93: {  // STACK_GLOBAL (protocol 4)
          const ValuePtr name = pop();
          const ValuePtr module = pop();
          auto g = make(Value::Kind::Global);
          g->text = expect(module, Value::Kind::String)->text + " " +
                    expect(name, Value::Kind::String)->text;
          push(g);
          break;
        }
        case 'q':
          memo_[byte()] = top();
          break;  // BINPUT
        case 'r':
          memo_[le(4)] = top();
          break;  // LONG_BINPUT
        case 0x94:
          memo_[memo_.size()] = top();
          break;  // MEMOIZE
        case 'h':
          push(memo(byte()));
          break;  // BINGET
        case 'j':
          push(memo(le(4)));
          break;  // LONG_BINGET
        case ')':
          push(make(Value::Kind::Tuple));
          break;  // EMPTY_TUPLE
        case 't':
          push(tuple(popToMark()));
          break;  // TUPLE
        case 0x85:
          push(tuple(popN(1)));
          break;  // TUPLE1
        case 0x86:
          push(tuple(popN(2)));
          break;  // TUPLE2
        case 0x87:
          push(tuple(popN(3)));
          break;  // TUPLE3
        case ']':
          push(make(Value::Kind::List));
          break;     // EMPTY_LIST
        case 'a': {  // APPEND
          ValuePtr v = pop();
          expect(top(), Value::Kind::List)->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<ValuePtr> vs = popToMark();
          auto& items = expect(top(), Value::Kind::List)->items;
          items.insert(items.end(), vs.begin(), vs.end());
          break;
        }
        case '}':
          push(make(Value::Kind::Dict));
          break;     // EMPTY_DICT
        case 's': {  // SETITEM
          ValuePtr v = pop();
          ValuePtr k = pop();
          expect(top(), Value::Kind::Dict)->entries.emplace_back(k, v);
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<ValuePtr> kv = popToMark();
          if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of items");
          auto& entries = expect(top(), Value::Kind::Dict)->entries;
          for (size_t i = 0; i < kv.size(); i += 2)
            entries.emplace_back(kv[i], kv[i + 1]);
          break;
        }
        case 'b':
          pop();
          break;  // BUILD: the attributes of an object (a state_dict's _metadata)
        case 'Q':
          push(persistent(pop()));
          break;     // BINPERSID
        case 'R': {  // REDUCE
          ValuePtr args = pop();
          ValuePtr callable = pop();
          push(reduce(callable, args));
          break;
        }
        default: {
          std::ostringstream os;
          os << "unsupported pickle opcode 0x" << std::hex << static_cast<int>(op);
          fail(os.str());
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw StateDictError(source_ + ": not a state_dict written by torch.save: " + why);
  }

  uint8_t byte() {
    if (pos_ >= data_.size()) fail("the pickle ends early");
    return static_cast<uint8_t>(data_[pos_++]);
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }
  int64_t long1() {
    const uint8_t n = byte();
    if (n > 8) fail("an integer wider than 64 bits");
    uint64_t v = le(n);
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign
    return static_cast<int64_t>(v);
  }
  std::string bytes(uint64_t n) {
    if (n > data_.size() - pos_) fail("the pickle ends early");
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string line() {
    const size_t end = data_.find('\n', pos_);
    if (end == std::string::npos) fail("the pickle ends early");
    std::string s = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  void push(ValuePtr v) { stack_.push_back(std::move(v)); }
  ValuePtr pop() {
    if (stack_.empty()) fail("malformed pickle (stack underflow)");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  ValuePtr top() {
    if (stack_.empty()) fail("malformed pickle (stack underflow)");
    return stack_.back();
  }
  std::vector<ValuePtr> popN(size_t n) {
    if (stack_.size() < n) fail("malformed pickle (stack underflow)");
    std::vector<ValuePtr> vs(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return vs;
  }
  std::vector<ValuePtr> popToMark() {
    size_t k = stack_.size();
    while (k > 0 && stack_[k - 1]->kind != Value::Kind::Mark)
      --k;
    if (k == 0) fail("malformed pickle (no mark)");
    std::vector<ValuePtr> vs(stack_.begin() + static_cast<std::ptrdiff_t>(k), stack_.end());
    stack_.resize(k - 1);
    return vs;
  }
  ValuePtr memo(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("malformed pickle (unknown memo entry)");
    return it->second;
  }
  ValuePtr expect(const ValuePtr& v, Value::Kind kind) const {
    if (v->kind != kind)
      fail(std::string("expected ") + kindName(kind) + ", found " + kindName(v->kind));
    return v;
  }

  static ValuePtr boolean(bool b) {
    auto v = make(Value::Kind::Bool);
    v->boolean = b;
    return v;
  }
  static ValuePtr integer(int64_t i) {
    auto v = make(Value::Kind::Int);
    v->integer = i;
    return v;
  }
  ValuePtr real() {
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
      bits = (bits << 8) | byte();  // big endian
    auto v = make(Value::Kind::Float);
    std::memcpy(&v->real, &bits, sizeof bits);
    return v;
  }
  static ValuePtr string(std::string s) {
    auto v = make(Value::Kind::String);
    v->text = std::move(s);
    return v;
  }
  static ValuePtr tuple(std::vector<ValuePtr> items) {
    auto v = make(Value::Kind::Tuple);
    v->items = std::move(items);
    return v;
  }

  std::vector<int64_t> ints(const ValuePtr& v) const {
    std::vector<int64_t> out;
    for (const ValuePtr& x : expect(v, Value::Kind::Tuple)->items)
      out.push_back(expect(x, Value::Kind::Int)->integer);
    return out;
  }

  // ('storage', <class torch.XStorage>, key, location, numel): the raw data is the
  // archive's record data/<key>. Storages shared by several tensors are read once.
  ValuePtr persistent(const ValuePtr& pid) {
    const auto& t = expect(pid, Value::Kind::Tuple)->items;
    if (t.size() < 5 || t[0]->kind != Value::Kind::String || t[0]->text != "storage")
      fail("a persistent object that is not a tensor storage");
    const std::string key = expect(t[2], Value::Kind::String)->text;
    if (auto it = storages_.find(key); it != storages_.end()) return it->second;
    const std::string type = expect(t[1], Value::Kind::Global)->text;
    const auto dtype = storageType(type);
    if (!dtype) fail("unsupported tensor storage type " + type);
    const int64_t numel = expect(t[4], Value::Kind::Int)->integer;
    const std::string record = "data/" + key;
    if (!zip_.hasRecord(record)) fail("the archive has no record " + record);
    auto [ptr, size] = zip_.getRecord(record);
    at::Tensor flat = at::empty({numel}, at::TensorOptions().dtype(*dtype));
    const size_t need = static_cast<size_t>(numel) * flat.element_size();
    if (size < need) fail("record " + record + " is shorter than its storage");
    if (need > 0) std::memcpy(flat.data_ptr(), ptr.get(), need);
    auto v = make(Value::Kind::Storage);
    v->tensor = flat;
    storages_[key] = v;
    return v;
  }

  ValuePtr reduce(const ValuePtr& callable, const ValuePtr& args) {
    const std::string& name = expect(callable, Value::Kind::Global)->text;
    const auto& a = expect(args, Value::Kind::Tuple)->items;
    if (name == "collections OrderedDict") {
      if (!a.empty()) fail("an OrderedDict built from arguments");
      return make(Value::Kind::Dict);
    }
    if (name == "torch._utils _rebuild_tensor_v2") {
      if (a.size() < 4) fail("a tensor with too few arguments");
      const at::Tensor& storage = expect(a[0], Value::Kind::Storage)->tensor;
      const int64_t offset = expect(a[1], Value::Kind::Int)->integer;
      const std::vector<int64_t> size = ints(a[2]);
      const std::vector<int64_t> stride = ints(a[3]);
      int64_t last = offset;
      for (size_t d = 0; d < size.size(); ++d) {
        if (size[d] == 0) {
          last = -1;
          break;
        }
        last += (size[d] - 1) * stride[d];
      }
      if (last >= storage.numel()) fail("a tensor larger than its storage");
      auto v = make(Value::Kind::Tensor);
      v->tensor = at::empty({0}, storage.options()).set_(storage.storage(), offset, size, stride);
      return v;
    }
    if (name == "torch._utils _rebuild_parameter" ||
        name == "torch._utils _rebuild_parameter_with_state") {
      if (a.empty()) fail("a parameter without data");
      auto v = make(Value::Kind::Tensor);
      v->tensor = expect(a[0], Value::Kind::Tensor)->tensor;
      return v;
    }
    fail("it holds a Python object (" + name + ") that a state_dict does not");
  }

  std::string data_;
  size_t pos_ = 0;
  caffe2::serialize::PyTorchStreamReader& zip_;
  std::string source_;
  std::vector<ValuePtr> stack_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
  std::unordered_map<std::string, ValuePtr> storages_;
};

std::string describeValue(const ValuePtr& v) {
  if (v->kind != Value::Kind::Dict) return kindName(v->kind);
  std::string keys;
  for (size_t i = 0; i < v->entries.size() && i < 6; ++i) {
    keys += (i ? ", " : "");
    keys += v->entries[i].first->kind == Value::Kind::String ? v->entries[i].first->text : "?";
  }
  if (v->entries.size() > 6) keys += ", ...";
  return "a dict with keys [" + keys + "]";
}

}  // namespace

StateDict parseStateDict(const std::string& bytes, const std::string& source) {
  if (bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x80) {
    throw StateDictError(source +
                         ": written in torch.save's legacy format "
                         "(_use_new_zipfile_serialization=False); load it in Python and save it "
                         "again with torch.save's default format");
  }
  if (bytes.size() < 4 || bytes.compare(0, 2, "PK") != 0) {
    throw StateDictError(source +
                         ": not a file of torch.save (not a zip archive); expected "
                         "torch.save(model.state_dict(), path)");
  }
  std::istringstream stream(bytes);
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(&stream);
  } catch (const std::exception& e) {
    throw StateDictError(source + ": not a file of torch.save: " + e.what());
  }
  if (!zip->hasRecord("data.pkl")) {
    const bool script = zip->hasRecord("constants.pkl") || zip->hasRecord("code/");
    throw StateDictError(source + (script ? ": a TorchScript module (torch.jit.save), not a "
                                            "state_dict; save model.state_dict() instead"
                                          : ": not a file of torch.save (no data.pkl)"));
  }
  if (zip->hasRecord("byteorder")) {
    auto [ptr, size] = zip->getRecord("byteorder");
    const std::string order(static_cast<const char*>(ptr.get()), size);
    if (order != "little")
      throw StateDictError(source + ": written on a " + order + "-endian machine; unsupported");
  }
  auto [ptr, size] = zip->getRecord("data.pkl");
  Unpickler unpickler(std::string(static_cast<const char*>(ptr.get()), size), *zip, source);
  const ValuePtr root = unpickler.run();
  if (root->kind != Value::Kind::Dict)
    throw StateDictError(source + ": holds " + describeValue(root) +
                         ", not a state_dict (a dict of parameter names to tensors)");
  StateDict state;
  state.reserve(root->entries.size());
  for (const auto& [k, v] : root->entries) {
    if (k->kind != Value::Kind::String || v->kind != Value::Kind::Tensor) {
      throw StateDictError(source + ": holds " + describeValue(root) +
                           ", not a state_dict (a dict of parameter names to tensors)" +
                           (k->kind == Value::Kind::String
                                ? "; the value of \"" + k->text + "\" is " + kindName(v->kind)
                                : std::string()));
    }
    state.emplace_back(k->text, v->tensor);
  }
  return state;
}

StateDict readStateDict(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw StateDictError(file.string() + ": cannot open the file");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parseStateDict(bytes, file.string());
}

}  // namespace mrcnn::model
