// The fused CUDA cross-entropy against the CPU reference (kernels/cpu_cross_entropy.hpp): every
// dtype, the 16-byte and the one-element paths, a padded row stride, ignored rows, the gradient
// written over the logits, a bad target's NaN and the checked entry points' errors. Skipped, with
// the reason, where no CUDA device is present.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/cuda_cross_entropy.hpp"
#include "kernels/device_query.hpp"
#include "kernels/kernel_error.hpp"
#include "tests/kernels/cuda_test_util.hpp"

namespace shardscope::kernels {
namespace {

using testing::DeviceBuffer;
using testing::relative_error;

// Fresh random logits (N(0, 4^2), stored in `dtype` as raw bits) for every case.
std::vector<std::uint16_t> random_logits16(std::size_t n, Dtype dtype, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<std::uint16_t> out(n);
  for (auto& v : out) v = dtype == Dtype::kBFloat16 ? float_to_bf16(normal(gen)) : float_to_fp16(normal(gen));
  return out;
}

std::vector<float> as_floats(const std::vector<std::uint16_t>& bits, Dtype dtype) {
  std::vector<float> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) out[i] = load_as_float(bits.data(), dtype, i);
  return out;
}

class CudaCrossEntropy : public testing::CudaStreamTest {
 protected:

  // One case: random logits of `rows` x `vocab` in a stride of `stride`, every seventh row ignored;
  // the GPU's lse, loss and gradient (separate buffer, then over the logits) against the CPU's.
  void check_case(Dtype dtype, std::int64_t rows, std::int64_t vocab, std::int64_t stride) {
    const std::string label = dtype_name(dtype) + " " + std::to_string(rows) + "x" + std::to_string(vocab) +
                              " stride " + std::to_string(stride);
    std::mt19937 gen(static_cast<unsigned>(rows * 131 + vocab));
    const auto n = static_cast<std::size_t>(rows * stride);
    std::vector<std::uint16_t> bits16;
    std::vector<float> bits32;
    if (dtype == Dtype::kFloat32) {
      std::normal_distribution<float> normal(0.0f, 4.0f);
      for (std::size_t i = 0; i < n; ++i) bits32.push_back(normal(gen));
    } else {
      bits16 = random_logits16(n, dtype, gen);
    }
    std::vector<std::int64_t> targets(static_cast<std::size_t>(rows));
    std::uniform_int_distribution<std::int64_t> pick(0, vocab - 1);
    for (std::int64_t r = 0; r < rows; ++r) targets[static_cast<std::size_t>(r)] = r % 7 == 3 ? -100 : pick(gen);
    const void* host = dtype == Dtype::kFloat32 ? static_cast<const void*>(bits32.data()) : bits16.data();
    CrossEntropyRows cpu{host, dtype, rows, vocab, stride, targets.data(), -100};
    std::vector<float> lse(static_cast<std::size_t>(rows)), loss(lse.size());
    cpu_cross_entropy_forward(cpu, lse.data(), loss.data());
    const float scale = 0.37f;
    std::vector<std::uint16_t> grad16(n, 0);
    std::vector<float> grad32(n, 0.0f);
    void* grad_host = dtype == Dtype::kFloat32 ? static_cast<void*>(grad32.data()) : grad16.data();
    cpu_cross_entropy_backward(cpu, lse.data(), scale, {grad_host, stride});

    DeviceBuffer<std::uint16_t> d16(bits16);
    DeviceBuffer<float> d32(bits32);
    DeviceBuffer<std::int64_t> d_targets(targets);
    DeviceBuffer<float> d_lse(std::vector<float>(lse.size(), NAN)), d_loss(std::vector<float>(lse.size(), NAN));
    DeviceBuffer<float> d_scale(std::vector<float>{scale});
    void* d_logits = dtype == Dtype::kFloat32 ? static_cast<void*>(d32.get()) : d16.get();
    CrossEntropyRows gpu{d_logits, dtype, rows, vocab, stride, d_targets.get(), -100};
    cuda_cross_entropy_forward(gpu, d_lse.get(), d_loss.get(), stream_);
    // Poisoned (NaN bits) so an element the kernel does not write fails the comparison.
    DeviceBuffer<std::uint16_t> g16(std::vector<std::uint16_t>(dtype == Dtype::kFloat32 ? 0 : n, 0x7fc0));
    DeviceBuffer<float> g32(std::vector<float>(dtype == Dtype::kFloat32 ? n : 0, NAN));
    void* d_grad = dtype == Dtype::kFloat32 ? static_cast<void*>(g32.get()) : g16.get();
    cuda_cross_entropy_backward(gpu, d_lse.get(), d_scale.get(), {d_grad, stride}, stream_);
    // Then the gradient over the logits themselves: the same values.
    cuda_cross_entropy_backward(gpu, d_lse.get(), d_scale.get(), {d_logits, stride}, stream_);
    SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_), "test");

    std::vector<float> gpu_lse(lse.size()), gpu_loss(lse.size());
    d_lse.download(gpu_lse);
    d_loss.download(gpu_loss);
    for (std::size_t r = 0; r < lse.size(); ++r) {
      EXPECT_NEAR(gpu_lse[r], lse[r], 1e-5 * std::abs(lse[r]) + 1e-5) << label << " row " << r;
      EXPECT_NEAR(gpu_loss[r], loss[r], 1e-5 * std::abs(lse[r]) + 1e-5) << label << " row " << r;
    }
    std::vector<float> ref, separate, over;
    if (dtype == Dtype::kFloat32) {
      ref = grad32;
      separate.resize(n);
      over.resize(n);
      g32.download(separate);
      d32.download(over);
    } else {
      ref = as_floats(grad16, dtype);
      std::vector<std::uint16_t> a(n), b(n);
      g16.download(a);
      d16.download(b);
      separate = as_floats(a, dtype);
      over = as_floats(b, dtype);
    }
    for (std::int64_t r = 0; r < rows; ++r)  // the padding between rows is not the gradient's
      for (std::int64_t j = vocab; j < stride; ++j) ref[r * stride + j] = separate[r * stride + j] = over[r * stride + j] = 0;
    for (float v : separate) ASSERT_FALSE(std::isnan(v)) << label << ": an element was not written";
    // fp32: exp's rounding; 16-bit: at most one rounding step of an element apart.
    EXPECT_LT(relative_error(separate, ref), dtype == Dtype::kFloat32 ? 1e-5 : 1e-2) << label;
    EXPECT_EQ(separate, over) << label << ": the gradient over the logits differs from the one beside them";
  }
};

TEST_F(CudaCrossEntropy, MatchesCpuReferenceOnBothPaths) {
  for (Dtype dtype : {Dtype::kBFloat16, Dtype::kFloat16, Dtype::kFloat32}) {
    check_case(dtype, 37, 4096, 4096);  // 16-byte loads
    check_case(dtype, 23, 1001, 1001);  // a vocabulary that is no multiple of 8: one element at a time
    check_case(dtype, 9, 512, 520);     // rows in a padded stride
    check_case(dtype, 3, 50304, 50304); // GPT-2's vocabulary
  }
}

TEST_F(CudaCrossEntropy, ABadTargetGivesNaNAndHostPointersAreRefused) {
  const std::vector<float> logits(8, 0.5f);
  DeviceBuffer<float> d_logits(logits);
  DeviceBuffer<std::int64_t> d_targets(std::vector<std::int64_t>{1, 4});
  DeviceBuffer<float> lse(std::vector<float>(2, 0.0f)), loss(std::vector<float>(2, 0.0f));
  CrossEntropyRows rows{d_logits.get(), Dtype::kFloat32, 2, 4, 4, d_targets.get(), -100};
  cuda_cross_entropy_forward(rows, lse.get(), loss.get(), stream_);
  SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_), "test");
  std::vector<float> out(2);
  loss.download(out);
  EXPECT_NEAR(out[0], std::log(4.0), 1e-6);
  EXPECT_TRUE(std::isnan(out[1])) << "target 4 of a 4-token vocabulary gave " << out[1];
  CrossEntropyRows on_host = rows;
  on_host.logits = logits.data();
  EXPECT_THROW(cuda_cross_entropy_forward(on_host, lse.get(), loss.get(), stream_), KernelError);
  EXPECT_THROW(cuda_cross_entropy_backward(rows, lse.get(), nullptr, {d_logits.get(), 4}, stream_), KernelError);
}

}  // namespace
}  // namespace shardscope::kernels
