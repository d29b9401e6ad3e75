#!/usr/bin/env bash
# Configures and builds the engine against a CPU-only LibTorch and checks that it runs and
# reports no CUDA. No CPU-only LibTorch can be downloaded here (only PyPI is reachable, whose
# x86_64 torch wheels are CUDA builds), so one is emulated from the wheel's package by
# scripts/emulate_cpu_libtorch.py. Run by ctest (test cpu_only_libtorch).
#
#   scripts/check_cpu_libtorch.sh <work dir>
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:?usage: check_cpu_libtorch.sh <work dir>}"
python="${MRCNN_PYTHON:-$root/.venv/bin/python}"
torch_dir="$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"

mkdir -p "$work"
"$python" "$root/scripts/emulate_cpu_libtorch.py" "$torch_dir" "$work/libtorch-cpu"
cmake -G Ninja -S "$root" -B "$work/build" -DMRCNN_BUILD_TESTS=OFF \
  -DTorch_DIR="$work/libtorch-cpu/share/cmake/Torch" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
grep -q "(CUDA: OFF)" "$work/configure.log" || { echo "LibTorch was not taken as CPU-only"; exit 1; }
ninja -C "$work/build" mrcnn-engine mrcnn-workbench > "$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; exit 1; }
out="$("$work/build/bin/mrcnn-workbench" --headless "$root/specs/shapes_resnet18.txt" \
  --set device=cpu --set "output_dir=$work/runs" \
  --set "data_config.shapes_dataset.root=$work/shapes" \
  --set data_config.shapes_dataset.train_images=4 --set data_config.shapes_dataset.val_images=1 \
  --set train_batch_size=2 --set total_steps=2 --set logging_frequency=1)"
echo "$out"
grep -q "CUDA build: no" <<< "$out"
echo "CPU-only LibTorch: configured, built and ran"
