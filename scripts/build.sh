#!/usr/bin/env bash
# Sets up the machine if needed (scripts/setup.sh), configures the CMake build once, and
# builds the given targets (all by default).
#
#   scripts/build.sh [target...]        MRCNN_BUILD_DIR=build-x scripts/build.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MRCNN_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"

# Let ccache share objects between clones in different folders (CI builds a fresh clone).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# Configured once, for this machine:
# - -O2 without debug information (Release, its -O3 made -O2 as the benchmarks were measured)
#   unless MRCNN_BUILD_TYPE says otherwise: with -g a LibTorch source compiles about 45% longer
#   (engine/tasks/train_task.cpp: 46 s against 32 s, AMD EPYC, 2026-11-29);
#   MRCNN_BUILD_TYPE=RelWithDebInfo for a debugger.
# - The CUDA kernels for this machine's GPUs ("native"), or for sm_90 alone (the H100 and H200
#   that the GPU checks run on, with PTX for newer cards) where there is no GPU: nothing runs
#   them here, they only have to compile and link, and each architecture costs nvcc about 15 s
#   a kernel. MRCNN_CUDA_ARCHS overrides it (CMake's own default builds every architecture
#   CUDA 13 supports: engine/ops/CMakeLists.txt).
if [[ ! -f "$build/build.ninja" ]]; then
  archs="${MRCNN_CUDA_ARCHS:-}"
  if [[ -z "$archs" ]]; then
    if nvidia-smi -L > /dev/null 2>&1; then archs=native; else archs=90; fi
  fi
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${MRCNN_BUILD_TYPE:-Release}" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DMRCNN_CUDA_ARCHS="$archs" --no-warn-unused-cli
fi
started=$(date +%s)
ninja -C "$build" "$@"
echo "[build] done in $(( $(date +%s) - started )) s"
