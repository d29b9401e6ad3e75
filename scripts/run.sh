#!/usr/bin/env bash
# The main job on the embedded default: sets up and builds what is needed, then runs
# `mrcnn-workbench --headless specs/shapes_resnet18.txt` (extra arguments are passed on,
# e.g. --task validate or --set maskrcnn_config.nlayers=34).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MRCNN_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" mrcnn-workbench mrcnn-engine
exec "$build/bin/mrcnn-workbench" --headless "$root/specs/shapes_resnet18.txt" "$@"
