// Whether this CPU computes bf16 natively (AVX-512 BF16 or AMX-BF16), read from /proc/cpuinfo:
// for tests that do not link LibTorch (tests/common/native_bf16.h asks LibTorch itself) and
// check the engine's choice of precision from the outside.
#pragma once

#include <QFile>
#include <QRegularExpression>
#include <QString>

namespace mrcnn::testing {

inline bool cpuFlagsHaveNativeBf16() {
  QFile f("/proc/cpuinfo");
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QString text = QString::fromLatin1(f.readAll());
  static const QRegularExpression flag(R"(^flags\s*:.*\b(avx512_bf16|amx_bf16)\b)",
                                       QRegularExpression::MultilineOption);
  return flag.match(text).hasMatch();
}

}  // namespace mrcnn::testing
