// The fused CUDA LayerNorm against the CPU reference (kernels/cpu_layer_norm.hpp): every dtype, one
// and two packs per thread, a width that leaves threads idle, more rows than backward blocks and
// fewer, what the kernels refuse. Skipped, with the reason, where no CUDA device is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/cuda_layer_norm.hpp"
#include "kernels/device_query.hpp"
#include "kernels/kernel_error.hpp"
#include "tests/kernels/cuda_test_util.hpp"

namespace shardscope::kernels {
namespace {

using testing::DeviceBuffer;
using testing::relative_error;

// Values of `dtype` stored as raw bits (fp32 as its 32 bits), drawn N(mu, sigma^2).
std::vector<std::uint32_t> random_values(std::size_t n, Dtype dtype, float mu, float sigma, std::mt19937& gen) {
  std::normal_distribution<float> normal(mu, sigma);
  std::vector<std::uint32_t> out(n);
  for (auto& v : out) {
    const float f = normal(gen);
    v = dtype == Dtype::kFloat32 ? float_bits(f) : dtype == Dtype::kBFloat16 ? float_to_bf16(f) : float_to_fp16(f);
  }
  return out;
}

// Packed into the dtype's width for the device and the reference (16-bit values 2 bytes each).
std::vector<std::uint8_t> packed(const std::vector<std::uint32_t>& values, Dtype dtype) {
  std::vector<std::uint8_t> bytes(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) std::memcpy(&bytes[i * dtype_size(dtype)], &values[i], dtype_size(dtype));
  return bytes;
}

std::vector<float> floats(const std::vector<std::uint8_t>& bytes, Dtype dtype) {
  std::vector<float> out(bytes.size() / dtype_size(dtype));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_as_float(bytes.data(), dtype, i);
  return out;
}

class CudaLayerNorm : public testing::CudaStreamTest {
 protected:

  void check_case(Dtype dtype, std::int64_t rows, std::int64_t width) {
    const std::string label = dtype_name(dtype) + " " + std::to_string(rows) + "x" + std::to_string(width);
    std::mt19937 gen(static_cast<unsigned>(rows * 7 + width));
    const auto n = static_cast<std::size_t>(rows * width), w = static_cast<std::size_t>(width);
    const auto x = packed(random_values(n, dtype, 0.3f, 2.0f, gen), dtype);
    const auto dy = packed(random_values(n, dtype, 0.0f, 1.0f, gen), dtype);
    const auto weight = packed(random_values(w, dtype, 1.0f, 0.2f, gen), dtype);
    const auto bias = packed(random_values(w, dtype, 0.0f, 0.2f, gen), dtype);
    const LayerNormShape shape{rows, width, dtype, 1e-5f};
    std::vector<std::uint8_t> y(x.size()), dx(x.size()), dweight(weight.size()), dbias(weight.size());
    std::vector<float> mean(static_cast<std::size_t>(rows)), rstd(mean.size());
    cpu_layer_norm_forward(shape, {x.data(), weight.data(), bias.data(), y.data(), mean.data(), rstd.data()});
    cpu_layer_norm_backward(shape, {dy.data(), x.data(), weight.data(), mean.data(), rstd.data(), dx.data(),
                                    dweight.data(), dbias.data()});

    DeviceBuffer<std::uint8_t> d_x(x), d_dy(dy), d_w(weight), d_b(bias);
    DeviceBuffer<std::uint8_t> d_y(std::vector<std::uint8_t>(x.size(), 0xff)), d_dx(std::vector<std::uint8_t>(x.size(), 0xff));
    DeviceBuffer<std::uint8_t> d_dw(std::vector<std::uint8_t>(weight.size(), 0xff)), d_db(std::vector<std::uint8_t>(weight.size(), 0xff));
    DeviceBuffer<float> d_mean(std::vector<float>(mean.size(), NAN)), d_rstd(std::vector<float>(mean.size(), NAN));
    DeviceBuffer<float> workspace(std::vector<float>(cuda_layer_norm_workspace_floats(shape), NAN));
    cuda_layer_norm_forward(shape, {d_x.get(), d_w.get(), d_b.get(), d_y.get(), d_mean.get(), d_rstd.get()}, stream_);
    cuda_layer_norm_backward(shape, {d_dy.get(), d_x.get(), d_w.get(), d_mean.get(), d_rstd.get(), d_dx.get(),
                                     d_dw.get(), d_db.get()}, workspace.get(), stream_);
    SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_), "test");
    std::vector<float> gpu_mean(mean.size()), gpu_rstd(mean.size());
    d_mean.download(gpu_mean);
    d_rstd.download(gpu_rstd);
    for (std::size_t r = 0; r < mean.size(); ++r) {
      EXPECT_NEAR(gpu_mean[r], mean[r], 1e-5 + 1e-5 * std::abs(mean[r])) << label << " row " << r;
      EXPECT_NEAR(gpu_rstd[r], rstd[r], 1e-5 * rstd[r]) << label << " row " << r;
    }
    const double tolerance = dtype == Dtype::kFloat32 ? 1e-5 : 1e-2;  // 16-bit: one rounding of each element
    std::vector<std::uint8_t> out(x.size()), small(weight.size());
    d_y.download(out);
    EXPECT_LT(relative_error(floats(out, dtype), floats(y, dtype)), tolerance) << label << " y";
    d_dx.download(out);
    EXPECT_LT(relative_error(floats(out, dtype), floats(dx, dtype)), tolerance) << label << " dx";
    d_dw.download(small);
    EXPECT_LT(relative_error(floats(small, dtype), floats(dweight, dtype)), tolerance) << label << " dweight";
    d_db.download(small);
    EXPECT_LT(relative_error(floats(small, dtype), floats(dbias, dtype)), tolerance) << label << " dbias";
  }
};

TEST_F(CudaLayerNorm, MatchesCpuReference) {
  for (Dtype dtype : {Dtype::kBFloat16, Dtype::kFloat16, Dtype::kFloat32}) {
    check_case(dtype, 300, 2048);  // GPT-2 1.3B's width
    check_case(dtype, 2000, 768);  // more rows than backward blocks; threads without a pack
    check_case(dtype, 5, 768);     // fewer rows than blocks
    check_case(dtype, 40, 4096 / static_cast<std::int64_t>(dtype_size(dtype)) * 2);  // two packs per thread
  }
}

TEST_F(CudaLayerNorm, RefusesWhatItCannotTake) {
  DeviceBuffer<float> buffer(std::vector<float>(4096, 0.0f));
  const void* aligned[] = {buffer.get()};
  const void* unaligned[] = {buffer.get() + 1};
  EXPECT_TRUE(cuda_layer_norm_fits({4, 1024, Dtype::kBFloat16, 1e-5f}, aligned, 1));
  EXPECT_FALSE(cuda_layer_norm_fits({4, 1001, Dtype::kBFloat16, 1e-5f}, aligned, 1)) << "not whole packs";
  EXPECT_FALSE(cuda_layer_norm_fits({4, 8192, Dtype::kBFloat16, 1e-5f}, aligned, 1)) << "wider than 512 packs";
  EXPECT_FALSE(cuda_layer_norm_fits({4, 1024, Dtype::kBFloat16, 1e-5f}, unaligned, 1)) << "unaligned";
  LayerNormForward io{buffer.get(), buffer.get(), buffer.get(), buffer.get() + 2048, buffer.get(), buffer.get()};
  EXPECT_THROW(cuda_layer_norm_forward({2, 1001, Dtype::kFloat32, 1e-5f}, io, stream_), KernelError);
}

}  // namespace
}  // namespace shardscope::kernels
