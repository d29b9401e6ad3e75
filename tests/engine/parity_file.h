// The expected values a parity script saved with torch.save (a plain dict of tensors).
#pragma once

#include <torch/serialize.h>

#include <QString>
#include <fstream>
#include <iterator>
#include <vector>

namespace mrcnn::testing {

// Reads `path` into `out`; returns an empty string, or why it could not.
inline QString readParityFile(const QString& path, c10::IValue* out) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  try {
    *out = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    return QString("cannot read ") + path + ": " + e.what();
  }
  if (!out->isGenericDict()) return QString("cannot read ") + path + ": not a dict";
  return {};
}

// Accessors of the dict a parity script saved (readParityFile); each throws c10::Error naming
// nothing more than the key when it is missing or of another type.
using ParityDict = c10::Dict<c10::IValue, c10::IValue>;

inline at::Tensor tensorAt(const ParityDict& d, const char* key) { return d.at(key).toTensor(); }
inline int64_t intAt(const ParityDict& d, const char* key) { return d.at(key).toInt(); }
inline std::vector<at::Tensor> tensorsAt(const ParityDict& d, const char* key) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : d.at(key).toList()) out.push_back(v.toTensor());
  return out;
}

}  // namespace mrcnn::testing
