# Locates LibTorch. The torch wheel in the project's Python environment (.venv, made by
# scripts/setup.sh) ships TorchConfig.cmake; we look there first so that a plain
# `cmake -S . -B build` finds it with no flags. Torch_DIR or CMAKE_PREFIX_PATH still win,
# which is how a standalone (for example CPU-only) LibTorch is used instead.
#
# Sets MRCNN_TORCH_CUDA to ON when the LibTorch found was built with CUDA; CUDA sources of
# the project are compiled only then.

set(MRCNN_VENV "${CMAKE_SOURCE_DIR}/.venv" CACHE PATH "The project's Python environment")
if(DEFINED ENV{MRCNN_VENV})
  set(MRCNN_VENV "$ENV{MRCNN_VENV}" CACHE PATH "The project's Python environment" FORCE)
endif()
set(MRCNN_PYTHON "${MRCNN_VENV}/bin/python" CACHE FILEPATH "Python with torchvision and pycocotools (test oracles)")

if(NOT Torch_DIR)
  file(GLOB _mrcnn_torch_cfg "${MRCNN_VENV}/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake")
  if(_mrcnn_torch_cfg)
    list(GET _mrcnn_torch_cfg 0 _mrcnn_torch_cfg)
    get_filename_component(_mrcnn_torch_dir "${_mrcnn_torch_cfg}" DIRECTORY)
    set(Torch_DIR "${_mrcnn_torch_dir}" CACHE PATH "Directory of TorchConfig.cmake")
  endif()
endif()

# LibTorch's CUDA configuration looks for the toolkit; point it at the usual place.
if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CUDAToolkit_ROOT /usr/local/cuda CACHE PATH "CUDA toolkit")
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc")
endif()

# LibTorch's CUDA configuration probes for a GPU to pick architectures, which fails where
# there is none; name them instead (CUDA 13 builds for Turing and newer).
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "7.5;8.0;8.6;8.9;9.0;10.0;12.0" CACHE STRING "CUDA architectures of our kernels")
endif()

find_package(Torch REQUIRED)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "LibTorch not found: run scripts/setup.sh (it installs the torch wheel into ${MRCNN_VENV}) or pass -DTorch_DIR=<libtorch>/share/cmake/Torch")
endif()

if(TARGET torch_cuda OR CAFFE2_USE_CUDA)
  set(MRCNN_TORCH_CUDA ON)
else()
  set(MRCNN_TORCH_CUDA OFF)
endif()
message(STATUS "LibTorch ${Torch_VERSION} from ${Torch_DIR} (CUDA: ${MRCNN_TORCH_CUDA})")

# One target to link against: LibTorch's libraries and flags, plus the CUDA runtime
# libraries of the wheel (nvidia/*/lib). libtorch_cuda finds those at run time through its
# own RPATH; the linker needs them too, or it picks up older copies from the system (an
# NCCL of the CUDA toolkit, for instance) and fails on missing symbols.
add_library(mrcnn_torch INTERFACE)
target_link_libraries(mrcnn_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(mrcnn_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
get_filename_component(_mrcnn_site "${Torch_DIR}/../../../.." ABSOLUTE)
file(GLOB _mrcnn_nvidia_libs LIST_DIRECTORIES true "${_mrcnn_site}/nvidia/*/lib")
foreach(_dir IN LISTS _mrcnn_nvidia_libs)
  target_link_options(mrcnn_torch INTERFACE "LINKER:-rpath-link,${_dir}")
endforeach()
