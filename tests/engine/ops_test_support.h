// What the detection ops' tests share: the parity data of ops_parity.py (torchvision.ops and
// BoxCoder's results, made live when MRCNN_PYTHON names a Python with torchvision), tensor
// comparisons, strided views, random boxes and RoIs, and the skip where there is no GPU.
#pragma once

#include <torch/cuda.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include "tests/common/reference_script.h"
#include "tests/engine/parity_file.h"

namespace mrcnn::testing::ops_support {

using Dict = c10::Dict<c10::IValue, c10::IValue>;

inline at::Tensor tensorAt(const Dict& d, const char* key) {
  return d.at(key).toTensor();
}
inline double doubleAt(const Dict& d, const char* key) {
  const c10::IValue v = d.at(key);
  return v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
}
inline int64_t intAt(const Dict& d, const char* key) {
  return d.at(key).toInt();
}
inline bool boolAt(const Dict& d, const char* key) {
  return d.at(key).toBool();
}

inline std::vector<Dict> casesOf(const Dict& root, const char* op) {
  std::vector<Dict> cases;
  for (const c10::IValue& v : root.at(op).toList())
    cases.push_back(v.toGenericDict());
  return cases;
}

// max |a - b| over all elements; NaN in the same places counts as equal, NaN against a
// number as infinitely far.
inline double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  const at::Tensor x = a.cpu().to(at::kDouble);
  const at::Tensor y = b.cpu().to(at::kDouble);
  if (!torch::equal(x.isnan(), y.isnan())) return INFINITY;
  const at::Tensor d = (x - y).abs().nan_to_num(0.0);
  return d.max().item<double>();
}

// max |a - b| / max(1, |b|).
inline double maxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  const at::Tensor x = a.cpu().to(at::kDouble);
  const at::Tensor y = b.cpu().to(at::kDouble);
  return ((x - y).abs() / y.abs().clamp_min(1.0)).max().item<double>();
}

inline std::vector<int64_t> toVector(const at::Tensor& t) {
  const at::Tensor c = t.cpu().to(at::kLong).contiguous();
  return {c.const_data_ptr<int64_t>(), c.const_data_ptr<int64_t>() + c.numel()};
}

inline QString describe(const std::vector<int64_t>& v) {
  QStringList s;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 12); ++i)
    s << QString::number(v[i]);
  return "[" + s.join(", ") + (v.size() > 12 ? ", ...]" : "]") + " (" + QString::number(v.size()) +
         ")";
}

// The same values with other strides: a transposed copy viewed back, and a slice of a
// wider tensor. Kernels that assume contiguity read garbage from these.
inline at::Tensor transposedView(const at::Tensor& t) {
  return t.transpose(-1, -2).contiguous().transpose(-1, -2);
}
inline at::Tensor slicedView(const at::Tensor& t) {
  return at::cat({t, t}, /*dim=*/1).narrow(1, 0, t.size(1));
}

#ifdef MRCNN_OPS_HAS_CUDA
inline constexpr const char* kNoGpu =
    "no GPU visible: the CUDA kernels are built and registered; these checks run where a GPU is";
#else
inline constexpr const char* kNoGpu = "LibTorch without CUDA: the CUDA kernels are not built";
#endif

#define SKIP_WITHOUT_GPU() \
  if (!torch::cuda::is_available()) QSKIP(kNoGpu)
inline at::Tensor randomBoxes(int64_t n, double size, at::ScalarType dtype) {
  const at::Tensor xy = torch::rand({n, 2}, at::kDouble) * size;
  const at::Tensor wh = torch::rand({n, 2}, at::kDouble) * size * 0.3 + 1.0;
  return at::cat({xy, xy + wh}, 1).to(dtype);
}

inline at::Tensor randomRois(int64_t k, int64_t batch, double img_h, double img_w,
                             at::ScalarType dtype) {
  at::Tensor rois = at::empty({k, 5}, at::kDouble);
  rois.select(1, 0).copy_(torch::randint(0, batch, {k}, at::kDouble));
  const at::Tensor x1 = torch::rand({k}, at::kDouble) * img_w * 1.3 - 0.2 * img_w;
  const at::Tensor y1 = torch::rand({k}, at::kDouble) * img_h * 1.3 - 0.2 * img_h;
  rois.select(1, 1).copy_(x1);
  rois.select(1, 2).copy_(y1);
  rois.select(1, 3).copy_(x1 + torch::rand({k}, at::kDouble) * img_w * 0.6);
  rois.select(1, 4).copy_(y1 + torch::rand({k}, at::kDouble) * img_h * 0.6);
  return rois.to(dtype);
}

// The message of what f() throws, or "" when it throws nothing.
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// The parity data, made once a test binary by ops_parity.py. The parity tests skip when no
// Python is configured, and fail when one is and the script does not deliver.
class OpsParity {
 public:
  void make() {
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
    if (python_.isEmpty()) return;
    const QString out = dir_.filePath("ops_parity.pt");
    QString log;
    error_ = runReferenceScript("tests/engine/ops_parity.py", {out}, &log);
    if (!error_.isEmpty()) return;
    qInfo("%s", qPrintable(log));
    error_ = readParityFile(out, &value_);
  }
  bool configured() const { return !python_.isEmpty(); }
  bool ready() const {  // fails the test (and says why) when the data could not be made
    if (!error_.isEmpty()) QTest::qFail(qPrintable(error_), __FILE__, __LINE__);
    return error_.isEmpty();
  }
  Dict dict() const { return value_.toGenericDict(); }

 private:
  QTemporaryDir dir_;
  QString python_;
  QString error_;      // why the parity data could not be made, when it could not
  c10::IValue value_;  // the dict ops_parity.py saved
};

}  // namespace mrcnn::testing::ops_support
