#!/usr/bin/env bash
# Sets up, builds everything and runs the whole test suite with ctest. Exits non-zero when
# a test fails. CI runs this (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MRCNN_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure --timeout 1800 "$@"
