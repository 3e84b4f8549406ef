#pragma once
// CUDA cross-entropy over rows of logits (see cpu_cross_entropy.hpp for the maths and the CPU
// reference). One block per row: the forward reads the row once, 16 bytes per thread and load,
// keeping a running max and sum of exponentials (fp32), and writes the row's log-sum-exp and loss;
// the backward reads it once more and writes (softmax - one_hot) x scale in the logits' dtype,
// into a separate buffer or over the logits themselves. For GPT-2's 50,304-token vocabulary that
// is 2 + 4 bytes per logit in all, against about 46 for F.cross_entropy(logits.float()).

#include <cuda_runtime_api.h>

#include "kernels/cpu_cross_entropy.hpp"

namespace shardscope::kernels {

/// Enqueues the forward on `stream`; no precondition checks. A target outside [0, vocab) that is
/// not ignore_index makes that row's loss NaN (a kernel cannot throw; the NaN reaches the loss).
void launch_cuda_cross_entropy_forward(const CrossEntropyRows& rows, float* row_lse, float* row_loss,
                                       cudaStream_t stream);
/// Enqueues the backward on `stream`; `scale` is one device float (d loss / d mean, divided by the
/// counted rows), read on the device so the host never waits for it.
void launch_cuda_cross_entropy_backward(const CrossEntropyRows& rows, const float* row_lse, const float* scale,
                                        const CrossEntropyGrad& grad, cudaStream_t stream);

/// Checked entry points: the description, device pointers, then the launch (NVTX range named so).
void cuda_cross_entropy_forward(const CrossEntropyRows& rows, float* row_lse, float* row_loss, cudaStream_t stream);
void cuda_cross_entropy_backward(const CrossEntropyRows& rows, const float* row_lse, const float* scale,
                                 const CrossEntropyGrad& grad, cudaStream_t stream);

}  // namespace shardscope::kernels
