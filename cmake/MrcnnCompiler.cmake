# Compiler settings shared by every target of the project.

find_program(MRCNN_CCACHE ccache)
if(MRCNN_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${MRCNN_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${MRCNN_CCACHE})
endif()

option(MRCNN_WERROR "Treat warnings in the project's own code as errors" ON)

# Warnings apply to our own sources only; generated code (protobuf, moc) and third-party
# headers are included as system headers or compiled without them.
function(mrcnn_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
      $<$<BOOL:${MRCNN_WERROR}>:-Werror>>)
endfunction()
