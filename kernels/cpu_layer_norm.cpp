#include "kernels/cpu_layer_norm.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

double at(const void* data, Dtype dtype, std::int64_t i) {
  return load_as_float(data, dtype, static_cast<std::size_t>(i));
}

}  // namespace

void check_layer_norm_shape(const LayerNormShape& shape, const char* kernel) {
  const std::string k = kernel;
  if (shape.rows < 0) throw KernelError(k + ": rows must be >= 0, got " + std::to_string(shape.rows));
  if (shape.width <= 0) throw KernelError(k + ": width must be positive, got " + std::to_string(shape.width));
  if (!(shape.eps > 0.0f)) throw KernelError(k + ": eps must be positive, got " + std::to_string(shape.eps));
}

void cpu_layer_norm_forward(const LayerNormShape& s, const LayerNormForward& io) {
  check_layer_norm_shape(s, "cpu_layer_norm_forward");
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::int64_t base = r * s.width;
    double mean = 0;
    for (std::int64_t j = 0; j < s.width; ++j) mean += at(io.x, s.dtype, base + j);
    mean /= static_cast<double>(s.width);
    double var = 0;
    for (std::int64_t j = 0; j < s.width; ++j) {
      const double d = at(io.x, s.dtype, base + j) - mean;
      var += d * d;
    }
    var /= static_cast<double>(s.width);
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(s.eps));
    io.mean[r] = static_cast<float>(mean);
    io.rstd[r] = static_cast<float>(rstd);
    for (std::int64_t j = 0; j < s.width; ++j) {
      const double xhat = (at(io.x, s.dtype, base + j) - mean) * rstd;
      const double y = xhat * at(io.weight, s.dtype, j) + at(io.bias, s.dtype, j);
      store_from_float(io.y, s.dtype, static_cast<std::size_t>(base + j), static_cast<float>(y));
    }
  }
}

void cpu_layer_norm_backward(const LayerNormShape& s, const LayerNormBackward& io) {
  check_layer_norm_shape(s, "cpu_layer_norm_backward");
  std::vector<double> dweight(static_cast<std::size_t>(s.width), 0.0), dbias(dweight.size(), 0.0);
  const double n = static_cast<double>(s.width);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::int64_t base = r * s.width;
    const double mean = io.mean[r], rstd = io.rstd[r];
    // dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * weight
    double sum_g = 0, sum_g_xhat = 0;
    for (std::int64_t j = 0; j < s.width; ++j) {
      const double xhat = (at(io.x, s.dtype, base + j) - mean) * rstd;
      const double dy = at(io.dy, s.dtype, base + j);
      const double g = dy * at(io.weight, s.dtype, j);
      sum_g += g;
      sum_g_xhat += g * xhat;
      dweight[static_cast<std::size_t>(j)] += dy * xhat;
      dbias[static_cast<std::size_t>(j)] += dy;
    }
    for (std::int64_t j = 0; j < s.width; ++j) {
      const double xhat = (at(io.x, s.dtype, base + j) - mean) * rstd;
      const double g = at(io.dy, s.dtype, base + j) * at(io.weight, s.dtype, j);
      const double dx = rstd * (g - sum_g / n - xhat * sum_g_xhat / n);
      store_from_float(io.dx, s.dtype, static_cast<std::size_t>(base + j), static_cast<float>(dx));
    }
  }
  for (std::int64_t j = 0; j < s.width; ++j) {
    store_from_float(io.dweight, s.dtype, static_cast<std::size_t>(j), static_cast<float>(dweight[static_cast<std::size_t>(j)]));
    store_from_float(io.dbias, s.dtype, static_cast<std::size_t>(j), static_cast<float>(dbias[static_cast<std::size_t>(j)]));
  }
}

}  // namespace shardscope::kernels
