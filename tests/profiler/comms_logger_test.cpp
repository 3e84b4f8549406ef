#include "profiler/comms_logger.hpp"

#include <gtest/gtest.h>

namespace shardscope::profiler {
namespace {

CommsLoggerOptions enabled() {
  CommsLoggerOptions o;
  o.enabled = true;
  return o;
}

TEST(TrimmedMean, DropsTenPercentAtEachEndAsScipyDoes) {
  EXPECT_DOUBLE_EQ(trimmed_mean({10, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.1), 5.5);   // 1 and 10 dropped
  EXPECT_DOUBLE_EQ(trimmed_mean({1, 2, 3, 100}, 0.1), 26.5);                   // int(0.4) = 0: plain mean
  EXPECT_DOUBLE_EQ(trimmed_mean({1000, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, 0.1), 1.0);
  EXPECT_THROW(trimmed_mean({}, 0.1), std::invalid_argument);
}

TEST(ConvertSize, MatchesDeepSpeedsText) {
  EXPECT_EQ(convert_size(0), "0B");
  EXPECT_EQ(convert_size(512), "512.0 B");
  EXPECT_EQ(convert_size(1536), "1.5 KB");
  EXPECT_EQ(convert_size(1u << 20), "1.0 MB");
  EXPECT_EQ(convert_size(500000000ull * 2), "953.67 MB");  // a 5e8-element bf16 bucket
}

TEST(CommsLogger, RecordsOnlyWhatTheConfigAsks) {
  CommsLoggerOptions off;
  EXPECT_FALSE(CommsLogger(off).should_record("all_reduce"));
  CommsLoggerOptions only = enabled();
  only.prof_all = false;
  only.prof_ops = {"all_gather"};
  CommsLogger logger(only);
  EXPECT_TRUE(logger.should_record("all_gather"));
  EXPECT_FALSE(logger.should_record("all_reduce"));
  logger.record("all_reduce", 1024, 2, 1.0);
  EXPECT_FALSE(logger.has_data());
  EXPECT_THROW(logger.record("allreduce", 1024, 2, 1.0), std::invalid_argument);
}

TEST(CommsLogger, VerboseLineHasDeepSpeedsFormatAndBandwidths) {
  CommsLoggerOptions o = enabled();
  o.verbose = true;
  CommsLogger logger(o);
  // 1e9 bytes all-reduced over 8 ranks in 10 ms: algbw 1600 Gbps, busbw 1400 Gbps.
  EXPECT_EQ(logger.record("all_reduce", 1'000'000'000, 8, 10.0),
            "comm op: all_reduce | time (ms): 10.00 | msg size: 953.67 MB | algbw (Gbps): 1600.00 | "
            "busbw (Gbps): 1400.00");
}

TEST(CommsLogger, SummaryGroupsByOpAndSizeWithTrimmedMeans) {
  CommsLoggerOptions o = enabled();
  o.debug = true;
  CommsLogger logger(o);
  for (int i = 1; i <= 10; ++i) logger.record("all_gather", 4096, 4, static_cast<double>(i), "fetch");
  logger.record("all_gather", 1024, 4, 2.0, "fetch");
  logger.record("reduce_scatter", 8192, 4, 1.0, "reduce");
  const auto ops = logger.summary();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "all_gather | [Caller Func: fetch]");
  ASSERT_EQ(ops[0].sizes.size(), 2u);
  EXPECT_EQ(ops[0].sizes[0].message_bytes, 1024u);  // sorted by size
  const auto& big = ops[0].sizes[1];
  EXPECT_EQ(big.count, 10);
  EXPECT_DOUBLE_EQ(big.total_latency_ms, 55.0);
  EXPECT_DOUBLE_EQ(big.avg_latency_ms, 5.5);  // 1 and 10 trimmed
  const std::string table = logger.format_summary();
  EXPECT_EQ(table.rfind("Comm. Op            Message Size        Count", 0), 0u) << table;
  EXPECT_NE(table.find("4.0 KB              10                  55.00               5.50"), std::string::npos)
      << table;
  logger.reset_data();
  EXPECT_FALSE(logger.has_data());
}

}  // namespace
}  // namespace shardscope::profiler
