# Sourced on the GPU machine (no network): makes DeepSpeed 0.19.7 importable for the benchmarks and
# keeps its JIT-built FusedAdam between calls.
#  - .device/ds-site.tgz (a previous call's /tmp/site and /tmp/torch_extensions, unpacked with their
#    mtimes, so ninja finds the extension up to date and does not build it again), or where it
#    lacks DeepSpeed,
#  - .whl/*.whl (DeepSpeed's wheel, built here with `pip wheel --no-deps --no-build-isolation
#    deepspeed==0.19.7`, and its pure-Python needs the image lacks: hjson, pydantic, pydantic-core,
#    annotated-types, typing-inspection, typing-extensions) installed into /tmp/site.
# Then FusedAdam is built (or found) in the background; gpu_python_deps_wait waits for it and
# gpu_python_deps_pack DEST writes ds-site.tgz for the next call when this call built it.
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
# DeepSpeed 0.19.7's JIT builder parses TORCH_CUDA_ARCH_LIST as numbers and fails on the image's
# "9.0a" (ValueError: invalid literal for int() with base 10: '0a'): name the device's plain
# compute capability instead, which is what it would probe without the variable.
export TORCH_CUDA_ARCH_LIST=$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
if [[ -f .device/ds-site.tgz ]]; then
  tar -xzf .device/ds-site.tgz -C /tmp
fi
if [[ ! -d /tmp/site/deepspeed ]] && compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
GPU_PYTHON_DEPS_FRESH=0
[[ -d /tmp/torch_extensions ]] || GPU_PYTHON_DEPS_FRESH=1  # FusedAdam gets built in this call
(python3 -c 'from deepspeed.ops.op_builder import FusedAdamBuilder; FusedAdamBuilder().load()' \
   > /tmp/fused_adam_build.log 2>&1; echo "rc=$?" >> /tmp/fused_adam_build.log) &
GPU_PYTHON_DEPS_PID=$!
gpu_python_deps_wait() {
  wait "$GPU_PYTHON_DEPS_PID"
  tail -n 3 /tmp/fused_adam_build.log
}
gpu_python_deps_pack() {
  [[ $GPU_PYTHON_DEPS_FRESH == 1 ]] && tar -czf "$1/ds-site.tgz" -C /tmp site torch_extensions
}
