#include "kernels/cuda_lamb.hpp"

#include "kernels/cuda_common.cuh"

namespace shardscope::kernels {
namespace {

using cuda_detail::kBlockSize;
using cuda_detail::kMaxBlocks;

// Workspace layout: [0] w^2, [1] u^2, [2] trust ratio, then kMaxBlocks partials of w^2 and of u^2.
constexpr std::size_t kWeightPartials = 3;
constexpr std::size_t kUpdatePartials = 3 + kMaxBlocks;

__device__ inline float lamb_update(const LambCoefficients& c, float p, float m, float v) {
  const float denom = c.eps_inside_sqrt ? sqrtf(v + c.eps) : sqrtf(v) + c.eps;
  return m / denom + p * c.weight_decay;
}

__global__ void lamb_moments_kernel(LambCoefficients c, FlatParams flat, LambState state, double* workspace) {
  double w2 = 0.0, u2 = 0.0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < flat.count;
       i += stride) {
    const float p = flat.params[i];
    const float g = cuda_detail::load_grad(flat.grads, i);
    const float m = state.exp_avg[i] * c.beta1 + g * c.one_minus_beta1;
    const float v = state.exp_avg_sq[i] * c.beta2 + (g * g) * c.one_minus_beta2;
    state.exp_avg[i] = m;
    state.exp_avg_sq[i] = v;
    const double u = lamb_update(c, p, m, v);
    w2 += static_cast<double>(p) * p;
    u2 += u * u;
  }
  const double block_w2 = cuda_detail::block_sum(w2);
  const double block_u2 = cuda_detail::block_sum(u2);
  if (threadIdx.x == 0) {
    workspace[kWeightPartials + blockIdx.x] = block_w2;
    workspace[kUpdatePartials + blockIdx.x] = block_u2;
  }
}

__global__ void lamb_ratio_kernel(LambCoefficients c, unsigned blocks, double* workspace) {
  const double w2 = cuda_detail::sum_partials(workspace + kWeightPartials, blocks);
  const double u2 = cuda_detail::sum_partials(workspace + kUpdatePartials, blocks);
  if (threadIdx.x != 0) return;
  // lamb_trust_ratio's rule, in the same double arithmetic.
  const double w = sqrt(w2), u = sqrt(u2);
  double ratio = 1.0;
  if (w != 0.0 && u != 0.0) ratio = fmin(fmax(w / u, static_cast<double>(c.min_coeff)), static_cast<double>(c.max_coeff));
  workspace[0] = w2;
  workspace[1] = u2;
  workspace[2] = static_cast<float>(ratio);
}

__global__ void lamb_apply_kernel(LambCoefficients c, FlatParams flat, LambState state, const double* workspace) {
  const float scale = c.step_size * static_cast<float>(workspace[2]);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < flat.count;
       i += stride) {
    const float p = flat.params[i] - scale * lamb_update(c, flat.params[i], state.exp_avg[i], state.exp_avg_sq[i]);
    flat.params[i] = p;
    if (flat.copy.data) cuda_detail::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
}

}  // namespace

std::size_t cuda_lamb_workspace_doubles() { return kUpdatePartials + kMaxBlocks; }

void launch_cuda_lamb(const LambCoefficients& c, const FlatParams& flat, const LambState& state, double* workspace,
                      cudaStream_t stream) {
  const unsigned blocks = flat.count == 0 ? 1 : cuda_detail::grid_for(flat.count);
  lamb_moments_kernel<<<blocks, kBlockSize, 0, stream>>>(c, flat, state, workspace);
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_lamb");
  lamb_ratio_kernel<<<1, kBlockSize, 0, stream>>>(c, blocks, workspace);
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_lamb");
  lamb_apply_kernel<<<blocks, kBlockSize, 0, stream>>>(c, flat, state, workspace);
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_lamb");
}

void cuda_lamb_step(const LambOptions& options, const FlatParams& flat, const LambState& state, std::int64_t step,
                    double* workspace, cudaStream_t stream) {
  CudaNvtxRange range("cuda_lamb_step");
  const LambCoefficients c = lamb_coefficients(options, step);
  cuda_detail::check_device_flat_params(flat, "cuda_lamb_step");
  check_device_pointer(state.exp_avg, flat.count, "cuda_lamb_step", "exp_avg");
  check_device_pointer(state.exp_avg_sq, flat.count, "cuda_lamb_step", "exp_avg_sq");
  check_device_pointer(workspace, cuda_lamb_workspace_doubles(), "cuda_lamb_step",
                       "workspace (cuda_lamb_workspace_doubles() doubles)");
  launch_cuda_lamb(c, flat, state, workspace, stream);
}

}  // namespace shardscope::kernels
