// The CUPTI collector's parts that need no device: the host clock, and the message of a build
// without CUPTI.
#include <ctime>

#include <gtest/gtest.h>

#include "profiler/cupti_activity.hpp"
#include "profiler/profiler_error.hpp"

namespace shardscope::profiler {
namespace {

TEST(CuptiActivity, HostClockIsUnixTimeInNanoseconds) {
  const double seconds = static_cast<double>(host_unix_ns()) / 1e9;
  EXPECT_NEAR(seconds, static_cast<double>(std::time(nullptr)), 2.0);
}

TEST(CuptiActivity, NothingToEmitWithoutAWindow) {
  int calls = 0;
  CuptiActivityCollector c({}, [&](sessions::ActivityBatch&&) { ++calls; }, [&](sessions::NvtxBatch&&) { ++calls; });
  c.flush();
  c.stop();
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(c.running());
#ifdef SHARDSCOPE_HAS_CUPTI
  EXPECT_TRUE(cupti_activity_available());
#else
  EXPECT_FALSE(cupti_activity_available());
  EXPECT_THROW(c.start(), ProfilerError);
#endif
}

}  // namespace
}  // namespace shardscope::profiler
