#pragma once
// CUDA LayerNorm over the last dimension (see cpu_layer_norm.hpp for the maths and the CPU
// reference). One block of 256 threads per row, each thread holding its 16-byte packs of the row
// in registers, so the forward reads the row from memory once and computes mean and variance in
// two exact passes over registers; the backward reads dy and x once, writes dx, and keeps each
// thread's columns of d weight and d bias in registers across the rows of its block, written as
// per-block partials and added up in a fixed order by a second small kernel (deterministic).

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cpu_layer_norm.hpp"

namespace shardscope::kernels {

/// Whether the kernels take this shape and these buffers: a width that is a whole number of
/// 16-byte packs and at most 512 of them (4096 bf16/fp16 or 2048 fp32 elements), and every
/// pointer 16-byte aligned. The engine falls back to torch's LayerNorm otherwise.
bool cuda_layer_norm_fits(const LayerNormShape& shape, const void* const* pointers, std::size_t count);

/// Floats of device workspace the backward needs for `shape` on the current device (the per-block
/// partials; the block count follows the device's multiprocessors).
std::size_t cuda_layer_norm_workspace_floats(const LayerNormShape& shape);

/// Enqueue on `stream`; no precondition checks.
void launch_cuda_layer_norm_forward(const LayerNormShape& shape, const LayerNormForward& io, cudaStream_t stream);
void launch_cuda_layer_norm_backward(const LayerNormShape& shape, const LayerNormBackward& io, float* workspace,
                                     cudaStream_t stream);

/// Checked entry points: shape, fit and device pointers, then the launch (NVTX range named so).
void cuda_layer_norm_forward(const LayerNormShape& shape, const LayerNormForward& io, cudaStream_t stream);
void cuda_layer_norm_backward(const LayerNormShape& shape, const LayerNormBackward& io, float* workspace,
                              cudaStream_t stream);

}  // namespace shardscope::kernels
