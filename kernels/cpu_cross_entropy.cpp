#include "kernels/cpu_cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

// The reference accumulates in double: the CUDA kernels' fp32 sums are checked against it.
double row_log_sum_exp(const CrossEntropyRows& rows, std::int64_t r) {
  const auto base = static_cast<std::size_t>(r * rows.row_stride);
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < rows.vocab; ++j)
    m = std::max(m, static_cast<double>(load_as_float(rows.logits, rows.dtype, base + static_cast<std::size_t>(j))));
  double sum = 0.0;
  for (std::int64_t j = 0; j < rows.vocab; ++j)
    sum += std::exp(static_cast<double>(load_as_float(rows.logits, rows.dtype, base + static_cast<std::size_t>(j))) - m);
  return m + std::log(sum);
}

std::int64_t checked_target(const CrossEntropyRows& rows, std::int64_t r) {
  const std::int64_t t = rows.targets[r];
  if (t != rows.ignore_index && (t < 0 || t >= rows.vocab))
    throw KernelError("cpu_cross_entropy: target " + std::to_string(t) + " of row " + std::to_string(r) +
                      " is outside the vocabulary [0, " + std::to_string(rows.vocab) + ") and is not ignore_index " +
                      std::to_string(rows.ignore_index));
  return t;
}

}  // namespace

void check_cross_entropy_rows(const CrossEntropyRows& rows, const char* kernel) {
  const std::string k = kernel;
  if (rows.rows < 0) throw KernelError(k + ": rows must be >= 0, got " + std::to_string(rows.rows));
  if (rows.rows == 0) return;
  if (rows.vocab <= 0) throw KernelError(k + ": vocab must be positive, got " + std::to_string(rows.vocab));
  if (rows.row_stride < rows.vocab)
    throw KernelError(k + ": row_stride " + std::to_string(rows.row_stride) + " is shorter than a row of " +
                      std::to_string(rows.vocab) + " logits");
  if (!rows.logits || !rows.targets) throw KernelError(k + ": logits and targets must not be null");
}

void cpu_cross_entropy_forward(const CrossEntropyRows& rows, float* row_lse, float* row_loss) {
  check_cross_entropy_rows(rows, "cpu_cross_entropy_forward");
  for (std::int64_t r = 0; r < rows.rows; ++r) {
    const std::int64_t t = checked_target(rows, r);
    const double lse = row_log_sum_exp(rows, r);
    row_lse[r] = static_cast<float>(lse);
    const double picked =
        t == rows.ignore_index ? lse
                               : load_as_float(rows.logits, rows.dtype, static_cast<std::size_t>(r * rows.row_stride + t));
    row_loss[r] = static_cast<float>(lse - picked);
  }
}

void cpu_cross_entropy_backward(const CrossEntropyRows& rows, const float* row_lse, float scale,
                                const CrossEntropyGrad& grad) {
  check_cross_entropy_rows(rows, "cpu_cross_entropy_backward");
  if (rows.rows > 0 && (!grad.data || grad.row_stride < rows.vocab))
    throw KernelError("cpu_cross_entropy_backward: the gradient buffer is null or its row_stride " +
                      std::to_string(grad.row_stride) + " is shorter than a row of " + std::to_string(rows.vocab));
  for (std::int64_t r = 0; r < rows.rows; ++r) {
    const std::int64_t t = checked_target(rows, r);
    const double k = t == rows.ignore_index ? 0.0 : static_cast<double>(scale);
    for (std::int64_t j = 0; j < rows.vocab; ++j) {
      const auto in = static_cast<std::size_t>(r * rows.row_stride + j);
      const double x = load_as_float(rows.logits, rows.dtype, in);
      const double g = (std::exp(x - static_cast<double>(row_lse[r])) - (j == t ? 1.0 : 0.0)) * k;
      store_from_float(grad.data, rows.dtype, static_cast<std::size_t>(r * grad.row_stride + j), static_cast<float>(g));
    }
  }
}

}  // namespace shardscope::kernels
