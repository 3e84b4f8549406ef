#pragma once
// Cross-entropy of rows of logits against one target id per row, fused: the forward reads each
// row once for its log-sum-exp (fp32, max-subtracted) and the target's logit; the backward reads
// it once more and writes d loss / d logit = (softmax - one_hot) x scale straight in the logits'
// dtype. Nothing vocabulary-sized in fp32 exists, where F.cross_entropy(logits.float()) writes the
// fp32 copy, its log-softmax and two more fp32 tensors in backward. This header has the shared
// description and the plain CPU reference the CUDA kernels (cuda_cross_entropy.hpp) are tested
// against.

#include <cstdint>

#include "kernels/dtype.hpp"

namespace shardscope::kernels {

/// `rows` rows of `vocab` logits, row r starting `row_stride` elements after row r - 1, and one
/// target id per row; a row whose target is `ignore_index` does not count.
struct CrossEntropyRows {
  const void* logits = nullptr;
  Dtype dtype = Dtype::kBFloat16;
  std::int64_t rows = 0;
  std::int64_t vocab = 0;
  std::int64_t row_stride = 0;
  const std::int64_t* targets = nullptr;
  std::int64_t ignore_index = -100;
};

/// Where the backward writes: `rows` x `vocab` values of the logits' dtype, row r at
/// data + r * row_stride (it may be the logits themselves: each element is read before written).
struct CrossEntropyGrad {
  void* data = nullptr;
  std::int64_t row_stride = 0;
};

/// Throws KernelError naming `kernel` when the description is inconsistent (null buffers, a stride
/// shorter than a row, a non-positive vocabulary).
void check_cross_entropy_rows(const CrossEntropyRows& rows, const char* kernel);

/// Per row: row_lse[r] = log(sum_j exp(x_rj)), row_loss[r] = row_lse[r] - x_r,target, both fp32
/// (0 loss for an ignored row). Throws KernelError for a target outside [0, vocab).
void cpu_cross_entropy_forward(const CrossEntropyRows& rows, float* row_lse, float* row_loss);
/// grad[r, j] = (exp(x_rj - row_lse[r]) - [j == target_r]) x scale, 0 on ignored rows.
void cpu_cross_entropy_backward(const CrossEntropyRows& rows, const float* row_lse, float scale,
                                const CrossEntropyGrad& grad);

}  // namespace shardscope::kernels
