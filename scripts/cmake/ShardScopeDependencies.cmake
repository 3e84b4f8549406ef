# Every dependency is found here, once; the summary at the end of configure says what was found.
include(CheckLanguage)

find_package(nlohmann_json 3.10 REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(Threads REQUIRED)

# The fuzzing build (SHARDSCOPE_FUZZ=ON, clang) compiles only the LibTorch-free readers: no
# LibTorch, CUDA, Qt or GoogleTest to find (tests/fuzz/CMakeLists.txt).
if(SHARDSCOPE_FUZZ)
  function(shardscope_print_feature_summary)
    message(STATUS "ShardScope ${PROJECT_VERSION}: fuzzing build (libFuzzer targets with "
                   "AddressSanitizer + UndefinedBehaviorSanitizer, ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION})")
  endfunction()
  return()
endif()

# LibTorch comes from the torch==2.11.0 wheel (scripts/install_deps.sh puts it in a venv outside
# the checkout). When no prefix is given, ask that venv's python where the wheel's CMake files are.
set(SHARDSCOPE_VENV "$ENV{HOME}/.cache/shardscope/venv" CACHE PATH "venv holding the torch wheel")
if(NOT Torch_DIR AND EXISTS "${SHARDSCOPE_VENV}/bin/python")
  execute_process(
    COMMAND "${SHARDSCOPE_VENV}/bin/python" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _shardscope_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_shardscope_torch_prefix)
    list(APPEND CMAKE_PREFIX_PATH "${_shardscope_torch_prefix}")
  endif()
endif()

# CUDA first: the CUDA build of LibTorch needs the toolkit to configure, and our kernels need nvcc.
set(SHARDSCOPE_HAS_CUDA OFF)
if(NOT SHARDSCOPE_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) is the GPU machine; 80 keeps A100s working; PTX of 90 for newer chips.
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(SHARDSCOPE_HAS_CUDA ON)
  elseif(SHARDSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SHARDSCOPE_CUDA=ON but no CUDA compiler was found; install the CUDA toolkit "
                        "or configure with -DSHARDSCOPE_CUDA=AUTO")
  endif()
endif()

# Torch's CUDA config wants TORCH_CUDA_ARCH_LIST and warns about CMAKE_CUDA_ARCHITECTURES; hide ours
# while it runs (it compiles no CUDA of ours) and give it the same architectures.
set(_shardscope_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
unset(CMAKE_CUDA_ARCHITECTURES)
set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "Architectures for LibTorch's CUDA flags")
find_package(Torch 2.11 QUIET)
set(CMAKE_CUDA_ARCHITECTURES "${_shardscope_cuda_archs}")
if(NOT Torch_FOUND)
  message(FATAL_ERROR
    "LibTorch 2.11 was not found.\n"
    "  Fix: run scripts/install_deps.sh (it installs the torch==2.11.0 wheel into ${SHARDSCOPE_VENV}),\n"
    "  or configure with -DCMAKE_PREFIX_PATH=$(python -c 'import torch.utils;print(torch.utils.cmake_prefix_path)')")
endif()
# The wheel's TorchConfig adds its flags to CMAKE_CXX_FLAGS (the C++11 ABI define among them).
set(SHARDSCOPE_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(SHARDSCOPE_TORCH_HAS_CUDA ON)
endif()
# Facts of the LibTorch build for `shardscope report`, which does not load LibTorch: its version,
# the CUDA version the wheel was built for (torch/version.py), and the wheel's nvidia/ folder
# where the cuDNN and NCCL it loads live (its RPATH's $ORIGIN/../../nvidia).
get_filename_component(_shardscope_torch_package "${Torch_DIR}/../../.." ABSOLUTE)
set(SHARDSCOPE_LIBTORCH_VERSION "${Torch_VERSION}")
set(SHARDSCOPE_TORCH_CUDA_VERSION "")
set(SHARDSCOPE_TORCH_NVIDIA_DIR "")
if(EXISTS "${_shardscope_torch_package}/version.py")
  file(STRINGS "${_shardscope_torch_package}/version.py" _shardscope_cuda_line REGEX "^cuda")
  if(_shardscope_cuda_line MATCHES "'([0-9.]+)'")
    set(SHARDSCOPE_TORCH_CUDA_VERSION "${CMAKE_MATCH_1}")
  endif()
  get_filename_component(SHARDSCOPE_TORCH_NVIDIA_DIR "${_shardscope_torch_package}/../nvidia" ABSOLUTE)
elseif(SHARDSCOPE_TORCH_HAS_CUDA AND SHARDSCOPE_HAS_CUDA)
  set(SHARDSCOPE_TORCH_CUDA_VERSION "${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}")
endif()
# The folder holding libtorch.so that an installed `shardscope` loads for the engine commands unless
# $SHARDSCOPE_LIBTORCH_DIR names another (app/cli/engine_loader.cpp). The default is this build's
# LibTorch; a package built for other machines may set it to where their torch wheel will be.
set(SHARDSCOPE_LIBTORCH_DIR "${_shardscope_torch_package}/lib" CACHE PATH
    "Folder with libtorch.so that the installed shardscope loads (overridden by $SHARDSCOPE_LIBTORCH_DIR)")

# Optional GPU-side libraries, only meaningful with the toolkit.
set(SHARDSCOPE_HAS_CUPTI OFF)
set(SHARDSCOPE_HAS_NVTX OFF)
set(SHARDSCOPE_HAS_NCCL OFF)
if(SHARDSCOPE_HAS_CUDA)
  if(TARGET CUDA::cupti)
    set(SHARDSCOPE_HAS_CUPTI ON)
  endif()
  if(TARGET CUDA::nvtx3)
    set(SHARDSCOPE_HAS_NVTX ON)
  endif()
  # The toolkit may carry nccl.h; otherwise the wheel's nvidia-nccl package beside torch does.
  find_path(SHARDSCOPE_NCCL_INCLUDE_DIR nccl.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} "${Torch_DIR}/../../../../nvidia/nccl/include")
  if(SHARDSCOPE_NCCL_INCLUDE_DIR)
    set(SHARDSCOPE_HAS_NCCL ON)
  endif()
endif()

# Asynchronous I/O for NVMe offload and `bench io`: libaio (what DeepSpeed's async_io op uses) and
# io_uring (liburing), each optional. Without them the build works and NVMe offload refuses to run,
# naming the package. Headers may come from .deb files unpacked into a sysroot on the GPU machine
# (scripts/fetch_gpu_debs.sh), hence CMAKE_PREFIX_PATH. libaio is used through its header only (the
# queue makes its four system calls itself, aio/libaio_queue.cpp); liburing's static archive is
# preferred, so the binary needs no libaio or liburing at run time (Ubuntu 24.04 renamed
# libaio.so.1 to .so.1t64).
set(SHARDSCOPE_HAS_LIBAIO OFF)
set(SHARDSCOPE_HAS_URING OFF)
if(NOT SHARDSCOPE_AIO STREQUAL "OFF")
  find_path(SHARDSCOPE_LIBAIO_INCLUDE_DIR libaio.h)
  if(SHARDSCOPE_LIBAIO_INCLUDE_DIR)
    set(SHARDSCOPE_HAS_LIBAIO ON)
  endif()
  find_path(SHARDSCOPE_URING_INCLUDE_DIR liburing.h)
  find_library(SHARDSCOPE_URING_LIBRARY NAMES liburing.a uring)
  if(SHARDSCOPE_URING_INCLUDE_DIR AND SHARDSCOPE_URING_LIBRARY)
    set(SHARDSCOPE_HAS_URING ON)
  endif()
endif()

# The GUI is optional: the GPU machine has no Qt.
set(SHARDSCOPE_HAS_GUI OFF)
if(NOT SHARDSCOPE_GUI STREQUAL "OFF")
  find_package(Qt6 6.2 QUIET COMPONENTS Widgets PrintSupport Test)
  find_package(QCustomPlotQt6 QUIET)
  if(Qt6_FOUND AND QCustomPlotQt6_FOUND)
    set(SHARDSCOPE_HAS_GUI ON)
  elseif(SHARDSCOPE_GUI STREQUAL "ON")
    message(FATAL_ERROR "SHARDSCOPE_GUI=ON but Qt 6 (Widgets, PrintSupport, Test) or QCustomPlotQt6 "
                        "was not found: apt-get install qt6-base-dev libqcustomplot-dev")
  endif()
endif()

set(SHARDSCOPE_HAS_TESTS OFF)
if(SHARDSCOPE_BUILD_TESTS STREQUAL "AUTO")
  find_package(GTest QUIET)
  if(GTest_FOUND)
    set(SHARDSCOPE_HAS_TESTS ON)
  endif()
elseif(SHARDSCOPE_BUILD_TESTS)
  find_package(GTest)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "SHARDSCOPE_BUILD_TESTS=ON but GoogleTest was not found: run scripts/install_test_deps.sh "
                        "(or apt-get install libgtest-dev libgmock-dev)")
  endif()
  set(SHARDSCOPE_HAS_TESTS ON)
endif()
# For scripts/test.sh: whether this build folder has its tests (a stale tests/ folder may not).
set(SHARDSCOPE_TESTS_CONFIGURED ${SHARDSCOPE_HAS_TESTS} CACHE INTERNAL "the ctest suite is configured")

function(shardscope_yes_no flag out)
  if(${flag})
    set(${out} "yes" PARENT_SCOPE)
  else()
    set(${out} "no" PARENT_SCOPE)
  endif()
endfunction()

function(shardscope_print_feature_summary)
  shardscope_yes_no(SHARDSCOPE_HAS_CUDA cuda)
  shardscope_yes_no(SHARDSCOPE_HAS_NCCL nccl)
  shardscope_yes_no(SHARDSCOPE_HAS_CUPTI cupti)
  shardscope_yes_no(SHARDSCOPE_HAS_NVTX nvtx)
  shardscope_yes_no(SHARDSCOPE_HAS_GUI gui)
  shardscope_yes_no(SHARDSCOPE_TORCH_HAS_CUDA torch_cuda)
  shardscope_yes_no(SHARDSCOPE_HAS_LIBAIO libaio)
  shardscope_yes_no(SHARDSCOPE_HAS_URING uring)
  shardscope_yes_no(SHARDSCOPE_HAS_TESTS tests)
  set(tests_why "")
  if(NOT SHARDSCOPE_HAS_TESTS AND SHARDSCOPE_BUILD_TESTS STREQUAL "AUTO")
    set(tests_why " (GoogleTest not found: scripts/install_test_deps.sh installs it)")
  endif()
  set(cuda_version "")
  if(SHARDSCOPE_HAS_CUDA)
    set(cuda_version " ${CUDAToolkit_VERSION}")
  endif()
  set(gui_why "")
  if(NOT SHARDSCOPE_HAS_GUI)
    set(gui_why " (shardscope-gui skipped: Qt 6 or QCustomPlotQt6 not found)")
  endif()
  message(STATUS "ShardScope ${PROJECT_VERSION}: LibTorch ${Torch_VERSION} (CUDA build: ${torch_cuda}) | "
                 "CUDA${cuda_version}: ${cuda} | NCCL: ${nccl} | CUPTI: ${cupti} | NVTX: ${nvtx} | "
                 "async I/O: libaio ${libaio}, io_uring ${uring} | GUI (Qt ${Qt6_VERSION}): ${gui}${gui_why} | "
                 "tests: ${tests}${tests_why}")
endfunction()
