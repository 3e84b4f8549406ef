// bench io's measurements: the sweep's points in table order, DeepSpeed's pick of the best point
// (highest read + write), the aio block it prints, one real point measured, fio's JSON report
// read and its command line built with the same block size, depth and jobs.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "aio/backend_probe.hpp"
#include "aio/fio_runner.hpp"
#include "aio/io_benchmark.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::aio {
namespace {

TEST(IoBench, SweepsEveryCombinationInTableOrder) {
  IoSweepOptions o;
  o.block_sizes = {1 << 20, 8 << 20};
  o.queue_depths = {4, 32};
  o.threads = {1, 2};
  o.backends = {IoBackend::kLibaio, IoBackend::kIoUring};
  const auto points = io_sweep_points(o);
  ASSERT_EQ(points.size(), 16u);
  EXPECT_EQ(points[0].backend, IoBackend::kLibaio);
  EXPECT_EQ(points[0].block_size, 1 << 20);
  EXPECT_EQ(points[1].intra_op_parallelism, 2);
  EXPECT_EQ(points[2].queue_depth, 32);
  EXPECT_EQ(points[4].block_size, 8 << 20);
  EXPECT_EQ(points[8].backend, IoBackend::kIoUring);
}

TEST(IoBench, TheBestPointHasTheHighestReadPlusWrite) {
  std::vector<IoMeasurement> rows(3);
  rows[0].write_gbps = 3.0, rows[0].read_gbps = 1.0;  // 4.0
  rows[1].write_gbps = 1.5, rows[1].read_gbps = 3.0;  // 4.5: best although neither is the top write
  rows[2].write_gbps = 0.5, rows[2].read_gbps = 3.5;  // 4.0
  rows[1].settings.queue_depth = 77;
  EXPECT_EQ(best_io_measurement(rows).settings.queue_depth, 77);
  EXPECT_THROW(best_io_measurement({}), std::invalid_argument);
}

TEST(IoBench, PrintsAnAioBlockDeepSpeedReads) {
  AioSettings s;
  s.block_size = 8 << 20;
  s.queue_depth = 32;
  s.intra_op_parallelism = 4;
  s.single_submit = true;
  s.overlap_events = false;
  const auto block = nlohmann::json::parse(aio_block_json(s));
  ASSERT_TRUE(block.contains("aio"));
  EXPECT_EQ(block["aio"]["block_size"], 8 << 20);
  EXPECT_EQ(block["aio"]["queue_depth"], 32);
  // DeepSpeed's own ds_nvme_tune prints "num_threads", which its aio reader ignores; this is the
  // key DeepSpeed reads.
  EXPECT_EQ(block["aio"]["intra_op_parallelism"], 4);
  EXPECT_EQ(block["aio"]["single_submit"], true);
  EXPECT_EQ(block["aio"]["overlap_events"], false);
  EXPECT_EQ(block["aio"].size(), 5u);
}

TEST(IoBench, MeasuresOnePointForReal) {
  BackendProbe probe = probe_io_backend(IoBackend::kLibaio, "/tmp");
  if (!probe.works) probe = probe_io_backend(IoBackend::kIoUring, "/tmp");
  if (!probe.works) GTEST_SKIP() << "no asynchronous I/O backend works here: " << probe.reason;
  test::TempDir dir;
  AioSettings s;
  s.backend = probe.backend;
  s.block_size = 1 << 20;
  s.queue_depth = 4;
  const IoMeasurement m = measure_io_point(s, dir.file("bench.dat"), 8 << 20, 2, true);
  EXPECT_GT(m.write_gbps, 0.0);
  EXPECT_GT(m.read_gbps, 0.0);
  EXPECT_NEAR(m.write_gbps, (8 << 20) / m.write_seconds / 1e9, 1e-9);
  EXPECT_FALSE(dir.exists("bench.dat")) << "the test file must be removed";
}

TEST(Fio, CommandUsesTheSameBlockSizeDepthAndJobs) {
  FioJob job;
  job.folder = "/nvme";
  job.io_size = 400 << 20;
  job.block_size = 1 << 20;
  job.queue_depth = 32;
  job.jobs = 4;
  job.engine = IoBackend::kIoUring;
  const auto cmd = fio_command("/usr/bin/fio", job, /*write=*/true);
  const auto has = [&](const std::string& arg) { return std::find(cmd.begin(), cmd.end(), arg) != cmd.end(); };
  EXPECT_EQ(cmd.front(), "/usr/bin/fio");
  EXPECT_TRUE(has("--rw=write"));
  EXPECT_TRUE(has("--bs=1048576"));
  EXPECT_TRUE(has("--iodepth=32"));
  EXPECT_TRUE(has("--numjobs=4"));
  EXPECT_TRUE(has("--size=104857600")) << "each job takes its slice, as each of our threads does";
  EXPECT_TRUE(has("--offset_increment=104857600"));
  EXPECT_TRUE(has("--ioengine=io_uring"));
  EXPECT_TRUE(has("--direct=1"));
  EXPECT_TRUE(has("--filename=/nvme/fio_bench.dat"));
  EXPECT_TRUE(has("--rw=read") == false);
}

TEST(Fio, ReadsBandwidthFromItsJsonReport) {
  const std::string report = R"(fio: warning: something harmless
{"fio version": "fio-3.33", "jobs": [{"jobname": "shardscope_bench_io",
  "read": {"bw_bytes": 2500000000, "iops": 2384.1}, "write": {"bw_bytes": 1250000000}}]})";
  EXPECT_DOUBLE_EQ(fio_bandwidth_gbps(report, false), 2.5);
  EXPECT_DOUBLE_EQ(fio_bandwidth_gbps(report, true), 1.25);
  EXPECT_THROW(fio_bandwidth_gbps("fio: engine libaio not loadable", true), std::runtime_error);
  EXPECT_THROW(fio_bandwidth_gbps(R"({"jobs": []})", true), std::runtime_error);
}

}  // namespace
}  // namespace shardscope::aio
