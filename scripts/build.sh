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

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${MRCNN_BUILD_TYPE:-RelWithDebInfo}"
fi
started=$(date +%s)
ninja -C "$build" "$@"
echo "[build] done in $(( $(date +%s) - started )) s"
