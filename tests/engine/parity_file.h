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

}  // namespace mrcnn::testing
