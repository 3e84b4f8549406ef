// device_query: the pure helpers, and the live query's consistency with itself (whatever machine).
#include "kernels/device_query.hpp"

#include <gtest/gtest.h>

namespace shardscope::kernels {
namespace {

TEST(DeviceQuery, CudaVersionString) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(11080), "11.8");
  EXPECT_EQ(cuda_version_string(0), "");
  EXPECT_EQ(cuda_version_string(-1), "");
}

TEST(DeviceQuery, PrecisionSupportFollowsComputeCapability) {
  EXPECT_FALSE(supports_fp16(6, 1));
  EXPECT_TRUE(supports_fp16(7, 0));
  EXPECT_TRUE(supports_fp16(7, 5));
  EXPECT_FALSE(supports_bf16(7, 5));
  EXPECT_TRUE(supports_bf16(8, 0));
  EXPECT_TRUE(supports_bf16(9, 0));
}

TEST(DeviceQuery, LiveQueryIsConsistent) {
  const CudaDeviceQuery q = query_cuda_devices();
#ifdef SHARDSCOPE_HAS_CUDA
  EXPECT_TRUE(q.compiled_with_cuda);
  EXPECT_GT(q.runtime_version, 0);
#else
  EXPECT_FALSE(q.compiled_with_cuda);
  EXPECT_TRUE(q.devices.empty());
#endif
  // Either devices are listed or the error says why not, never both empty.
  EXPECT_NE(q.devices.empty(), q.error.empty()) << "error: " << q.error;
  for (std::size_t i = 0; i < q.devices.size(); ++i) {
    EXPECT_EQ(q.devices[i].index, static_cast<int>(i));
    EXPECT_FALSE(q.devices[i].name.empty());
    EXPECT_GT(q.devices[i].total_memory_bytes, 0u);
    EXPECT_GT(q.devices[i].multiprocessors, 0);
    EXPECT_GE(q.devices[i].major, 3);
  }
}

}  // namespace
}  // namespace shardscope::kernels
