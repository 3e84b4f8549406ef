# Build switches. AUTO means: use it when it is found, say so in the summary, go on without it.
set(SHARDSCOPE_GUI "AUTO" CACHE STRING "Build shardscope-gui (ON, OFF, AUTO)")
set(SHARDSCOPE_CUDA "AUTO" CACHE STRING "Compile CUDA kernels and CUPTI/NVTX code (ON, OFF, AUTO)")
option(SHARDSCOPE_BUILD_TESTS "Build the ctest suite" ON)
option(SHARDSCOPE_WARNINGS_AS_ERRORS "Treat compiler warnings as errors" OFF)
# A separate build directory configured with clang: the libFuzzer targets of tests/fuzz/ over the
# LibTorch-free libraries, with AddressSanitizer + UndefinedBehaviorSanitizer (scripts/fuzz.sh).
option(SHARDSCOPE_FUZZ "Build only the libFuzzer targets (clang; ASan + UBSan)" OFF)

find_program(SHARDSCOPE_CCACHE ccache)
if(SHARDSCOPE_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${SHARDSCOPE_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${SHARDSCOPE_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${SHARDSCOPE_CCACHE}")
endif()

# Warnings for our own targets only (LibTorch's headers are included as SYSTEM).
function(shardscope_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  if(SHARDSCOPE_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
