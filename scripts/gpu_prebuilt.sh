# Sourced on the GPU machine: uses the binaries scripts/pack_gpu_prebuilt.sh copied into
# .device/prebuilt when they run here (the same torch 2.11.0+cu130 libraries, found through
# LD_LIBRARY_PATH instead of the development machine's paths). Sets CLI and CUDA_TEST_BINARIES and
# returns 0; returns 1 (and changes nothing but SHARDSCOPE_LIBTORCH_DIR) when there are none or they
# do not run.
# Usage: source scripts/gpu_prebuilt.sh && echo "using $CLI"
gpu_prebuilt_try() {
  local dir="$PWD/.device/prebuilt"
  [[ -x "$dir/shardscope" ]] || return 1
  local torch_lib nvidia_libs
  torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') || return 1
  nvidia_libs=$(ls -d "$torch_lib"/../../nvidia/*/lib 2>/dev/null | tr '\n' ':')
  local libs="$torch_lib:$nvidia_libs/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64"
  # The engine loads LibTorch from SHARDSCOPE_LIBTORCH_DIR, else from the folder the build machine
  # had (docs/build.md), which this machine does not have: point it at this machine's wheel.
  export SHARDSCOPE_LIBTORCH_DIR="$torch_lib"
  LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/shardscope" report > /dev/null 2>&1 || return 1
  # train loads the engine module (LibTorch): it must be there and load too.
  LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/shardscope" train --help > /dev/null 2>&1 || return 1
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  CLI="$dir/shardscope"
  CUDA_TEST_BINARIES=("$dir/engine_tests_cuda" "$dir/kernels_tests_cuda" "$dir/profiler_tests_cuda")
  return 0
}
gpu_prebuilt_try
