// Sizes, counts and bandwidths as users write them; the GPU catalog.
#include <gtest/gtest.h>

#include "estimator/byte_units.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::estimator {
namespace {

TEST(ByteUnits, Sizes) {
  EXPECT_EQ(parse_byte_size("80GiB", "--gpu-mem"), 80 * 1073741824.0);
  EXPECT_EQ(parse_byte_size("141 GB", "--gpu-mem"), 141e9);
  EXPECT_EQ(parse_byte_size("512MiB", "x"), 512 * 1048576.0);
  EXPECT_EQ(parse_byte_size("1.5TB", "x"), 1.5e12);
  EXPECT_EQ(parse_byte_size("4096", "x"), 4096);
  try {
    parse_byte_size("80GiX", "--gpu-mem");
    FAIL();
  } catch (const EstimatorError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu-mem"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("GiB = 2^30"), std::string::npos);
  }
  EXPECT_THROW(parse_byte_size("", "x"), EstimatorError);
  EXPECT_THROW(parse_byte_size("-5GB", "x"), EstimatorError);
}

TEST(ByteUnits, CountsBandwidthsFractions) {
  EXPECT_EQ(parse_count("7B", "--params"), 7e9);
  EXPECT_EQ(parse_count("6.7b", "--params"), 6.7e9);
  EXPECT_EQ(parse_count("125M", "x"), 125e6);
  EXPECT_EQ(parse_count("5e8", "x"), 5e8);
  EXPECT_EQ(parse_count("1,000,000", "x"), 1e6);
  EXPECT_THROW(parse_count("7 bananas", "x"), EstimatorError);
  EXPECT_EQ(parse_bandwidth("450GB/s", "x"), 450e9);
  EXPECT_EQ(parse_bandwidth("200Gbit/s", "x"), 25e9);
  EXPECT_EQ(parse_bandwidth("400 Gbps", "x"), 50e9);
  EXPECT_THROW(parse_bandwidth("450GB", "x"), EstimatorError);
  EXPECT_DOUBLE_EQ(parse_fraction("10%", "x"), 0.1);
  EXPECT_DOUBLE_EQ(parse_fraction("0.15", "x"), 0.15);
  EXPECT_THROW(parse_fraction("100%", "x"), EstimatorError);
}

TEST(ByteUnits, Formatting) {
  EXPECT_EQ(format_bytes(26.25e9, ByteUnit::kGB), "26.25 GB");
  EXPECT_EQ(format_bytes(80 * kGiB, ByteUnit::kGiB), "80.00 GiB");
  EXPECT_EQ(format_count(6738415616.0), "6.74B");
  EXPECT_EQ(format_count(32e6), "32.0M");
}

TEST(GpuCatalog, NamesAndAliases) {
  const auto h200 = find_gpu("h200");
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->memory_bytes, 143771 * 1048576.0);
  EXPECT_EQ(h200->marketing_size, "141 GB");
  EXPECT_EQ(find_gpu("A100 80GB")->name, "A100-80GB");
  EXPECT_EQ(find_gpu("a100-40gb")->memory_bytes, 40 * kGiB);
  EXPECT_EQ(find_gpu("RTX 4090")->name, "RTX-4090");
  EXPECT_EQ(find_gpu("H100")->link_bandwidth, 450e9);
  EXPECT_TRUE(find_gpu("L40S").has_value());
  EXPECT_FALSE(find_gpu("Z9000").has_value());
  try {
    require_gpu("H10", "--gpu");
    FAIL();
  } catch (const EstimatorError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--list-gpus"), std::string::npos);
  }
}

}  // namespace
}  // namespace shardscope::estimator
