# Locates OpenVINO's C++ runtime. The openvino wheel in the project's Python environment
# (.venv, made by scripts/setup.sh) ships its headers, libraries and OpenVINOConfig.cmake;
# OpenVINO_DIR or CMAKE_PREFIX_PATH still win. Only the runtime is used (the engine reads
# ONNX through it); Python is never involved.
if(NOT OpenVINO_DIR)
  file(GLOB _mrcnn_ov_cfg "${MRCNN_VENV}/lib/python3*/site-packages/openvino/cmake/OpenVINOConfig.cmake")
  if(_mrcnn_ov_cfg)
    list(GET _mrcnn_ov_cfg 0 _mrcnn_ov_cfg)
    get_filename_component(_mrcnn_ov_dir "${_mrcnn_ov_cfg}" DIRECTORY)
    set(OpenVINO_DIR "${_mrcnn_ov_dir}" CACHE PATH "Directory of OpenVINOConfig.cmake")
  endif()
endif()
find_package(OpenVINO COMPONENTS Runtime)
if(NOT OpenVINO_FOUND)
  message(FATAL_ERROR "OpenVINO not found: run scripts/setup.sh (it installs the openvino wheel into ${MRCNN_VENV}) or pass -DOpenVINO_DIR=<openvino>/cmake")
endif()
message(STATUS "OpenVINO ${OpenVINO_VERSION} from ${OpenVINO_DIR}")
