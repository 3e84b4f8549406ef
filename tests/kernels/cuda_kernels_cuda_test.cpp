// The CUDA kernels against the CPU scalar references (same sizes, dtypes and steps as the CPU
// tests), the norm's run-to-run determinism, the inf/NaN check, and the checked entry points'
// errors. Every test is skipped, with the reason, where no CUDA device is present.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "kernels/cuda_adagrad.hpp"
#include "kernels/cuda_adam.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_lamb.hpp"
#include "kernels/cuda_lion.hpp"
#include "kernels/cuda_norm.hpp"
#include "kernels/cuda_sgd.hpp"
#include "kernels/cuda_unscale.hpp"
#include "kernels/device_query.hpp"
#include "kernels/kernel_error.hpp"
#include "kernels/kernel_registry.hpp"
#include "tests/kernels/cuda_test_util.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace shardscope::kernels {
namespace {

using testing::DeviceBuffer;
using testing::OptimizerBuffers;

/// Device mirror of OptimizerBuffers.
struct DeviceOptimizerBuffers {
  DeviceBuffer<float> params, grads32;
  DeviceBuffer<std::uint16_t> grads16, copy;
  std::vector<DeviceBuffer<float>> states;

  explicit DeviceOptimizerBuffers(const OptimizerBuffers& h)
      : params(h.params), grads32(h.grads32), grads16(h.grads16), copy(h.copy) {
    for (const auto& s : h.states) states.emplace_back(s);
  }
  void upload_grads(const OptimizerBuffers& h) {
    grads32.upload(h.grads32);
    grads16.upload(h.grads16);
  }
  FlatParams flat(const OptimizerBuffers& h) const {
    FlatParams f;
    f.params = params.get();
    f.count = h.params.size();
    f.grads.dtype = h.grad_dtype;
    f.grads.data = h.grad_dtype == Dtype::kFloat32 ? static_cast<const void*>(grads32.get())
                                                   : static_cast<const void*>(grads16.get());
    if (h.copy_dtype != Dtype::kFloat32) f.copy = {copy.get(), h.copy_dtype};
    return f;
  }
  void download(OptimizerBuffers& h) const {
    params.download(h.params);
    copy.download(h.copy);
    for (std::size_t k = 0; k < states.size(); ++k) states[k].download(h.states[k]);
  }
};

class CudaKernels : public testing::CudaStreamTest {
 protected:

  using GpuRun = std::function<void(DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t step)>;
  using CpuRun = std::function<void(OptimizerBuffers& h, std::int64_t step)>;

  /// The GPU kernel on device buffers vs the CPU reference on host twins, 3 steps, every size/dtype.
  void check_against_cpu(int state_count, const GpuRun& gpu, const CpuRun& cpu) {
    for (std::size_t n : testing::kSizes) {
      for (const auto& [grad_dtype, copy_dtype] : testing::kDtypeCombos) {
        const std::string label = "CUDA n=" + std::to_string(n) + " grads=" + dtype_name(grad_dtype);
        OptimizerBuffers a(n, state_count, 7, grad_dtype, copy_dtype), b(n, state_count, 7, grad_dtype, copy_dtype);
        DeviceOptimizerBuffers d(a);
        for (int step = 1; step <= 3; ++step) {
          a.fill_grads(100 + step);
          b.fill_grads(100 + step);
          d.upload_grads(a);
          gpu(d, a, step);
          cpu(b, step);
        }
        SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_), "test");
        d.download(a);
        testing::expect_all_close(a.params, b.params, 1e-6, label + " params");
        for (int k = 0; k < state_count; ++k)
          testing::expect_all_close(a.states[k], b.states[k], 1e-6, label + " state " + std::to_string(k));
        testing::expect_same_copy(a, b, label);
      }
    }
  }
};

TEST_F(CudaKernels, AdamMatchesCpuReference) {
  for (bool adam_w : {true, false}) {
    AdamOptions o;
    o.adam_w_mode = adam_w;
    o.weight_decay = 0.01;
    check_against_cpu(
        2,
        [&](DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t t) {
          cuda_adam_step(o, d.flat(h), {d.states[0].get(), d.states[1].get()}, t, stream_);
        },
        [&](OptimizerBuffers& h, std::int64_t t) {
          cpu_adam_step_reference(o, h.flat(), {h.states[0].data(), h.states[1].data()}, t);
        });
  }
}

// The engine's unscale-and-clip factor rides in grads.scale: the same update as the CPU reference
// (itself checked against prescaled gradients in cpu_adam_test.cpp).
TEST_F(CudaKernels, AdamWithGradientScaleMatchesCpuReference) {
  AdamOptions o;
  o.weight_decay = 0.01;
  const float scale = 0.0123f;
  check_against_cpu(
      2,
      [&](DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t t) {
        FlatParams flat = d.flat(h);
        flat.grads.scale = scale;
        cuda_adam_step(o, flat, {d.states[0].get(), d.states[1].get()}, t, stream_);
      },
      [&](OptimizerBuffers& h, std::int64_t t) {
        FlatParams flat = h.flat();
        flat.grads.scale = scale;
        cpu_adam_step_reference(o, flat, {h.states[0].data(), h.states[1].data()}, t);
      });
}

// Buffers one element past an aligned start: the 4-wide path must not be taken on them (the
// 16-byte accesses would fault or mix elements), and the result is still the reference's.
TEST_F(CudaKernels, AdamOnUnalignedBuffersMatchesCpuReference) {
  AdamOptions o;
  o.weight_decay = 0.01;
  const std::size_t n = 1001;
  OptimizerBuffers a(n, 2, 11, Dtype::kBFloat16, Dtype::kBFloat16), b(n, 2, 11, Dtype::kBFloat16, Dtype::kBFloat16);
  DeviceOptimizerBuffers d(a);
  const auto shifted = [](FlatParams f, float* m, float* v) {
    f.params += 1;
    f.grads.data = static_cast<const std::uint16_t*>(f.grads.data) + 1;
    f.copy.data = static_cast<std::uint16_t*>(f.copy.data) + 1;
    f.count -= 1;
    return std::make_tuple(f, AdamState{m + 1, v + 1});
  };
  for (int step = 1; step <= 3; ++step) {
    a.fill_grads(40 + step);
    b.fill_grads(40 + step);
    d.upload_grads(a);
    const auto [gpu_flat, gpu_state] = shifted(d.flat(a), d.states[0].get(), d.states[1].get());
    cuda_adam_step(o, gpu_flat, gpu_state, step, stream_);
    const auto [cpu_flat, cpu_state] = shifted(b.flat(), b.states[0].data(), b.states[1].data());
    cpu_adam_step_reference(o, cpu_flat, cpu_state, step);
  }
  SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_), "test");
  d.download(a);
  testing::expect_all_close(a.params, b.params, 1e-6, "unaligned params");
  testing::expect_all_close(a.states[1], b.states[1], 1e-6, "unaligned exp_avg_sq");
  EXPECT_EQ(a.copy, b.copy) << "unaligned 16-bit copies differ";
}

TEST_F(CudaKernels, LambMatchesCpuReference) {
  LambOptions o;
  o.weight_decay = 0.01;
  o.lr = 1e-2;
  void* workspace = nullptr;
  SHARDSCOPE_CUDA_CHECK(cudaMalloc(&workspace, cuda_lamb_workspace_doubles() * sizeof(double)), "test");
  float gpu_ratio = 0.0f, cpu_ratio = 0.0f;
  check_against_cpu(
      2,
      [&](DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t t) {
        cuda_lamb_step(o, d.flat(h), {d.states[0].get(), d.states[1].get()}, t, static_cast<double*>(workspace),
                       stream_);
        double ratio = 0.0;
        SHARDSCOPE_CUDA_CHECK(cudaMemcpy(&ratio, static_cast<double*>(workspace) + 2, sizeof ratio,
                                         cudaMemcpyDeviceToHost), "test");
        gpu_ratio = static_cast<float>(ratio);
      },
      [&](OptimizerBuffers& h, std::int64_t t) {
        cpu_ratio = cpu_lamb_step_reference(o, h.flat(), {h.states[0].data(), h.states[1].data()}, t).trust_ratio;
        EXPECT_NEAR(gpu_ratio, cpu_ratio, 1e-6 * cpu_ratio) << "step " << t;
      });
  cudaFree(workspace);
}

TEST_F(CudaKernels, LionAdagradSgdMatchCpuReference) {
  LionOptions lion;
  lion.weight_decay = 0.1;
  check_against_cpu(
      1,
      [&](DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t t) {
        cuda_lion_step(lion, d.flat(h), {d.states[0].get()}, t, stream_);
      },
      [&](OptimizerBuffers& h, std::int64_t t) { cpu_lion_step_reference(lion, h.flat(), {h.states[0].data()}, t); });
  AdagradOptions adagrad;
  adagrad.weight_decay = 0.01;
  adagrad.lr_decay = 0.1;
  check_against_cpu(
      1,
      [&](DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t t) {
        cuda_adagrad_step(adagrad, d.flat(h), {d.states[0].get()}, t, stream_);
      },
      [&](OptimizerBuffers& h, std::int64_t t) {
        cpu_adagrad_step_reference(adagrad, h.flat(), {h.states[0].data()}, t);
      });
  SgdOptions sgd;
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weight_decay = 1e-3;
  check_against_cpu(
      1,
      [&](DeviceOptimizerBuffers& d, const OptimizerBuffers& h, std::int64_t t) {
        cuda_sgd_step(sgd, d.flat(h), {d.states[0].get()}, t, stream_);
      },
      [&](OptimizerBuffers& h, std::int64_t t) { cpu_sgd_step_reference(sgd, h.flat(), {h.states[0].data()}, t); });
}

TEST_F(CudaKernels, NormMatchesCpuAndRepeatsBitForBit) {
  for (std::size_t n : testing::kSizes) {
    const auto x = testing::random_floats(n, 5, -3.0f, 3.0f);
    DeviceBuffer<float> d(x);
    const double expected = cpu_squared_l2_norm_reference(x.data(), n);
    const double first = cuda_squared_l2_norm(d.get(), n, stream_);
    EXPECT_NEAR(first, expected, 1e-12 * expected) << "n=" << n;
    EXPECT_EQ(cuda_squared_l2_norm(d.get(), n, stream_), first) << "n=" << n;
    auto scaled = x;
    cuda_scale(d.get(), n, 0.25f, stream_);
    SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_), "test");
    d.download(scaled);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(scaled[i], x[i] * 0.25f) << i;
  }
}

TEST_F(CudaKernels, UnscaleFindsInfAndNan) {
  const std::size_t n = 100003;
  auto x = testing::random_floats(n, 8, -1.0f, 1.0f);
  DeviceBuffer<float> d(x);
  EXPECT_FALSE(cuda_unscale_and_check(d.get(), n, 0.5f, stream_));
  std::vector<float> back(n);
  d.download(back);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], x[i] * 0.5f) << i;
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      auto y = x;
      y[at] = bad;
      DeviceBuffer<float> dy(y);
      EXPECT_TRUE(cuda_unscale_and_check(dy.get(), n, 1.0f, stream_)) << "at " << at;
    }
  }
}

TEST_F(CudaKernels, CheckedEntryPointsRejectHostMemoryAndNameTheCall) {
  std::vector<float> host(16, 1.0f);
  try {
    cuda_scale(host.data(), host.size(), 2.0f, stream_);
    FAIL() << "a host pointer was accepted";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  try {
    SHARDSCOPE_CUDA_CHECK(cudaMemcpy(nullptr, host.data(), 64, cudaMemcpyHostToDevice), "the_test");
    FAIL() << "a copy to null succeeded";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaMemcpy(nullptr"), std::string::npos) << what;
    EXPECT_NE(what.find("in the_test on device 0"), std::string::npos) << what;
  }
}

TEST_F(CudaKernels, RegistryCallsThemUsable) {
  for (const auto& k : list_kernels())
    if (k.name.rfind("cuda_", 0) == 0) {
      EXPECT_TRUE(k.compatible) << k.name << ": " << k.reason;
    }
}

}  // namespace
}  // namespace shardscope::kernels
