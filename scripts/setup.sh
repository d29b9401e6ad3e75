#!/usr/bin/env bash
# Brings a fresh Debian 12 machine to the point where mrcnn-workbench builds and its
# tests run: Debian packages, then the project's Python environment (.venv) holding
# LibTorch (the torch wheel) and the test oracles (torchvision, pycocotools).
#
# Idempotent and quick when nothing changed: apt runs only when a package is missing,
# pip runs only when scripts/python-requirements*.txt changed since the last install.
#
#   scripts/setup.sh            install what is missing
#   MRCNN_VENV=/path scripts/setup.sh   put the environment elsewhere
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${MRCNN_VENV:-$root/.venv}"
requirements="$root/scripts/python-requirements.txt"
# Oracles installed without their dependencies (plotting stacks the tests never use).
requirements_nodeps="$root/scripts/python-requirements-nodeps.txt"
started=$(date +%s)

say() { printf '[setup] %s\n' "$*"; }

debian_packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqt6svg6 libqt6opengl6-dev
  libqcustomplot-dev
  libopencv-dev
  libprotobuf-dev protobuf-compiler
  libsimdjson-dev
  libgloo-dev   # headers only, for c10d's ProcessGroupGloo.hpp; never linked (engine/dist)
  libonnx-dev   # the ONNX messages, checker and shape inference of the export (engine/export)
  libpng-dev libtinyxml2-dev  # the dataset importers: VOC's palette PNGs, CVAT's XML (dataset/import)
  libcurl4-openssl-dev libssl-dev  # weights by name: the download and its SHA-256 (weights/)
  openssh-client rsync openssh-server  # remote runs (remote/): ssh, rsync; the tests' loopback sshd
  xvfb xauth
  clang libclang-rt-14-dev
  python3 python3-venv
)

missing=()
for p in "${debian_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "Debian packages: all present"
fi

# The CUDA toolkit is optional: LibTorch's CUDA build needs it at configure time, and the
# project's CUDA kernels are compiled when it is there.
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc_bin="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  say "CUDA toolkit: $("$nvcc_bin" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
else
  say "CUDA toolkit: not found (CPU-only build)"
fi

python_bin="${MRCNN_PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
  say "creating the Python environment in $venv"
  "$python_bin" -m venv "$venv"
fi

stamp="$venv/.mrcnn-requirements.sha256"
want="$(cat "$requirements" "$requirements_nodeps" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  say "installing pinned Python packages (torch, torchvision, pycocotools); the first time downloads several GB"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade "pip>=23.2"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$requirements_nodeps"
  "$venv/bin/python" - <<'PY'
import torch, torchvision, pycocotools  # noqa: F401  (fails loudly when the install is broken)
print(f"[setup] torch {torch.__version__} (CUDA build {torch.version.cuda}), torchvision {torchvision.__version__}")
PY
  echo "$want" > "$stamp"
else
  say "Python environment: up to date ($venv)"
fi

# datumaro (the importers' test oracle and benchmark peer) in a venv of its own inside the
# main one: its pins conflict with the main environment's (see the requirements file).
datumaro_requirements="$root/scripts/python-requirements-datumaro.txt"
datumaro_venv="$venv/datumaro"
datumaro_stamp="$datumaro_venv/.mrcnn-requirements.sha256"
datumaro_want="$(sha256sum < "$datumaro_requirements" | cut -d' ' -f1)"
if [[ ! -f "$datumaro_stamp" || "$(cat "$datumaro_stamp")" != "$datumaro_want" ]]; then
  say "installing datumaro (a test oracle) into $datumaro_venv"
  [[ -x "$datumaro_venv/bin/python" ]] || "$python_bin" -m venv "$datumaro_venv"
  "$datumaro_venv/bin/python" -m pip install -q --disable-pip-version-check -r "$datumaro_requirements"
  "$datumaro_venv/bin/python" -c "import datumaro" # fails loudly when the install is broken
  echo "$datumaro_want" > "$datumaro_stamp"
fi

say "done in $(( $(date +%s) - started )) s"
