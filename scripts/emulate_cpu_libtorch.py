#!/usr/bin/env python3
"""Builds a CPU-only LibTorch CMake package out of the CUDA torch wheel, for checking that the
project configures and builds against a CPU-only LibTorch on a machine that cannot download one.

The wheel's headers and libraries are linked in unchanged; its CMake files are copied with the
CUDA parts taken out, as a LibTorch built with USE_CUDA=0 writes them: no CUDA block in
Caffe2Config/TorchConfig, no c10_cuda, torch_cuda, torch_cuda_library or torch_nvshmem targets,
and `torch` linking torch_cpu only.

    emulate_cpu_libtorch.py <torch package dir> <output dir>
Then configure with -DTorch_DIR=<output dir>/share/cmake/Torch.
"""
import pathlib
import re
import shutil
import sys

CUDA_TARGETS = ("c10_cuda", "torch_cuda", "torch_cuda_library", "torch_nvshmem")


def strip_targets(text: str) -> str:
    # Drop every paragraph (blank-line separated) that defines or imports a CUDA target.
    paragraphs = text.split("\n\n")
    keep = []
    for p in paragraphs:
        if any(re.search(rf"\b(target|TARGET) {t}\b|add_library\({t} |set_target_properties\({t} "
                         rf"|_for_{t}\b|check_targets {t} ", p)
               for t in CUDA_TARGETS):
            continue
        keep.append(p)
    text = "\n\n".join(keep)
    for t in CUDA_TARGETS:
        text = re.sub(rf"\s\b{t}\b(?=[\s)])", "", text)
    text = text.replace('INTERFACE_LINK_LIBRARIES "torch_cpu_library;torch_cuda_library"',
                        'INTERFACE_LINK_LIBRARIES "torch_cpu_library"')
    text = re.sub(r'IMPORTED_LINK_DEPENDENT_LIBRARIES_RELEASE "[^"]*"\n', "", text)
    return text


def main() -> None:
    torch_dir, out = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    if out.exists():
        shutil.rmtree(out)
    (out / "share").mkdir(parents=True)
    (out / "include").symlink_to(torch_dir / "include")
    (out / "lib").symlink_to(torch_dir / "lib")
    shutil.copytree(torch_dir / "share" / "cmake", out / "share" / "cmake")
    caffe2 = out / "share/cmake/Caffe2"
    cfg = caffe2 / "Caffe2Config.cmake"
    text = cfg.read_text()
    text = text.replace("if(1)\n  # The file public/cuda.cmake", "if(0)\n  # The file public/cuda.cmake")
    cfg.write_text(text)
    tcfg = out / "share/cmake/Torch/TorchConfig.cmake"
    text = tcfg.read_text()
    text = text.replace("if(1)\n  if(MSVC)\n    find_library(CAFFE2_NVRTC_LIBRARY",
                        "if(0)\n  if(MSVC)\n    find_library(CAFFE2_NVRTC_LIBRARY")
    tcfg.write_text(text)
    for name in ("Caffe2Targets.cmake", "Caffe2Targets-release.cmake"):
        path = caffe2 / name
        path.write_text(strip_targets(path.read_text()))


if __name__ == "__main__":
    main()
