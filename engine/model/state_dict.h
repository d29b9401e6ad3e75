// state_dicts as PyTorch writes them: read a file of Python's torch.save(model.state_dict(),
// path) (the zip format, the default since PyTorch 1.6), write one that Python's torch.load
// reads back, and load one into a module by name, with torchvision's key rules.
//
// LibTorch's own torch::pickle_load cannot read a state_dict file: it turns every
// collections.OrderedDict into None (it expects them only as a tensor's backward hooks), and a
// state_dict is an OrderedDict. readStateDict therefore has its own small unpickler for what
// torch.save writes for a dict of tensors; it refuses anything else with a clear message.
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace mrcnn::model {

// Names to tensors, in file (or module) order.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

class StateDictError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws StateDictError naming the file: not a file of torch.save, not a dict of tensors.
StateDict readStateDict(const std::filesystem::path& file);
// The same from the bytes of such a file; `source` names it in messages.
StateDict parseStateDict(const std::string& bytes, const std::string& source);

// Writes `state` as torch.save writes a dict: Python's torch.load(file) (weights_only too) returns
// a dict of the same names and tensors. Via a temporary file renamed into place.
void writeStateDict(const StateDict& state, const std::filesystem::path& file);

// The module's parameters and buffers under `prefix`, module by module as PyTorch orders a
// state_dict (own parameters, own buffers, then children), detached.
StateDict stateDictOf(const torch::nn::Module& module, const std::string& prefix = "");

struct LoadOptions {
  std::string prefix;  // the module's keys in the file are prefix + name
  // (old name, current name) pairs relative to the module: file keys torchvision has used.
  std::vector<std::pair<std::string, std::string>> legacy_names;
  // Strict: missing and unexpected keys are errors (shape mismatches always are).
  bool strict = true;
  std::string source = "state_dict";  // names the file in messages
};

struct LoadReport {
  int loaded = 0;
  std::vector<std::string> missing;     // module names not in the file (non-strict)
  std::vector<std::string> unexpected;  // file keys under the prefix not used (non-strict)
};

// Copies the file's tensors into the module's parameters and buffers, without gradient.
// Only file keys under the prefix concern the module. A file's "<bn>.num_batches_tracked"
// where the module has a frozen batch norm (running_mean but no num_batches_tracked) is
// ignored, and a missing num_batches_tracked keeps the module's value, as torchvision does.
// Throws StateDictError listing every problem: missing keys, unexpected keys, and shape
// mismatches naming the key and both shapes.
LoadReport loadStateDict(torch::nn::Module& module, const StateDict& state,
                         const LoadOptions& options);

}  // namespace mrcnn::model
