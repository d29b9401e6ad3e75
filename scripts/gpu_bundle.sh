#!/usr/bin/env bash
# Packs a CUDA build of the engine for a machine that has a GPU, torch and nothing else (the
# lent GPU machines: no compiler dependencies, no package registry): the stripped engine and
# operator module, and every shared library they load that the torch wheel there does not
# provide (LibTorch, CUDA's libraries and the C/C++ runtimes are left to that machine).
#
#   scripts/gpu_bundle.sh BUILD_DIR OUT.tar.xz
#
# BUILD_DIR is a build against the same torch version as the target machine's (CMake's
# Torch_DIR), with its CUDA architectures (MRCNN_CUDA_ARCHS); `ninja mrcnn-engine
# mrcnn_ops_module` first. BUNDLE.txt inside names the torch version, the commit and the
# architectures; scripts/gpu_check.sh --bundle OUT.tar.xz refuses a bundle of another torch.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build="$(cd "$1" && pwd)"
out="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for f in bin/mrcnn-engine lib/libmrcnn_ops.so CMakeCache.txt; do
  [ -e "$build/$f" ] || { echo "gpu_bundle.sh: $build/$f is missing (build mrcnn-engine and mrcnn_ops_module)" >&2; exit 1; }
done
torch_cmake="$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")"
torch_version="$(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$torch_cmake/../../../version.py")"
archs="$(sed -n 's/^MRCNN_CUDA_ARCHS:[A-Z]*=//p' "$build/CMakeCache.txt")"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
objcopy --strip-debug "$build/bin/mrcnn-engine" "$stage/bin/mrcnn-engine"
objcopy --strip-debug "$build/lib/libmrcnn_ops.so" "$stage/lib/libmrcnn_ops.so"
# Libraries the target machine has: glibc's, the C++ runtime, LibTorch's and CUDA's.
provided='linux-vdso|ld-linux|/libc\.so|/libutil\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/libpthread|/libdl\.so|/librt\.so|/torch/lib/|/nvidia/|/usr/local/cuda'
ldd "$build/bin/mrcnn-engine" "$build/lib/libmrcnn_ops.so" | awk '/=> \//{print $3}' | sort -u \
  | grep -v -E "$provided" | while read -r lib; do
    cp -L "$lib" "$stage/lib/$(basename "$lib")"
    strip --strip-unneeded "$stage/lib/$(basename "$lib")" 2>/dev/null || true
  done
{
  echo "torch=$torch_version"
  echo "built=$(date -u +%Y-%m-%dT%H:%MZ) commit $(git -C "$root" rev-parse --short HEAD) on $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
  echo "cuda_archs=$archs"
  echo "libraries=$(ls "$stage/lib" | tr '\n' ' ')"
} > "$stage/BUNDLE.txt"
tar -C "$stage" -cJf "$out" .
echo "$out: $(du -h "$out" | cut -f1), torch $torch_version, CUDA architectures $archs"
cat "$stage/BUNDLE.txt"
