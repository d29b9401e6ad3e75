// Tensor comparisons shared by the parity tests.
#pragma once

#include <ATen/ATen.h>

#include <QString>
#include <QStringList>
#include <algorithm>
#include <cmath>

namespace mrcnn::testing {

// max |a - b| / max |b|: the error relative to the tensor's magnitude (inf on a shape
// mismatch).
inline double relError(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (b.numel() == 0) return 0.0;
  const at::Tensor x = a.to(at::kDouble);
  const at::Tensor y = b.to(at::kDouble);
  const double scale = std::max(y.abs().max().item<double>(), 1e-30);
  return (x - y).abs().max().item<double>() / scale;
}

// max |a - b| (inf on a shape mismatch).
inline double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (b.numel() == 0) return 0.0;
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

inline QString shapeOf(const at::Tensor& t) {
  QStringList s;
  for (int64_t d : t.sizes()) s << QString::number(d);
  return "[" + s.join(", ") + "]";
}

}  // namespace mrcnn::testing
