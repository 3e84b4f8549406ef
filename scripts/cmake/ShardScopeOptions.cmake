# Build switches. AUTO means: use it when it is found, say so in the summary, go on without it.
set(SHARDSCOPE_GUI "AUTO" CACHE STRING "Build shardscope-gui (ON, OFF, AUTO)")
set(SHARDSCOPE_CUDA "AUTO" CACHE STRING "Compile CUDA kernels and CUPTI/NVTX code (ON, OFF, AUTO)")
set(SHARDSCOPE_AIO "AUTO" CACHE STRING "libaio / io_uring backends for NVMe offload and bench io (AUTO, OFF)")
# AUTO: the tests are built when GoogleTest is installed (scripts/install_test_deps.sh installs it);
# scripts/run.sh needs none of it, scripts/test.sh configures with ON.
set(SHARDSCOPE_BUILD_TESTS "AUTO" CACHE STRING "Build the ctest suite (ON, OFF, AUTO)")
# Unity builds: each library compiles its sources in batches of 8 per translation unit, so the
# headers every file includes (nlohmann/json, Qt, LibTorch's precompiled header) are parsed and
# their templates instantiated once per batch, not once per file (docs/build.md, "Unity builds").
# Off suits editing one file over and over (a change recompiles its batch).
option(SHARDSCOPE_UNITY_BUILD "Compile each library's sources in unity batches" ON)
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
  # In a unity batch GCC sees a file's `Impl` holding a type of the file's anonymous namespace as
  # if it were declared in a header (-Wsubobject-linkage); each file is still its own unit by design.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:$<TARGET_PROPERTY:UNITY_BUILD>>>:-Wno-subobject-linkage>)
  endif()
  if(SHARDSCOPE_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
