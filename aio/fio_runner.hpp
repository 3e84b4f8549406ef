#pragma once
// fio (Debian's package) on the same folder, block size, queue depth and job count as one point
// of `bench io`, so our throughput can be read as a fraction of what the standard tool reaches on
// the same disk. One write pass, then one read pass of the same file, O_DIRECT, JSON output.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aio/io_queue.hpp"

namespace shardscope::aio {

struct FioJob {
  std::string folder;
  std::int64_t io_size = 0;     ///< bytes in all, split evenly over the jobs (like our threads)
  std::int64_t block_size = 0;
  int queue_depth = 1;
  int jobs = 1;                 ///< fio's numjobs: our intra_op_parallelism
  IoBackend engine = IoBackend::kLibaio;
  bool direct = true;
};

struct FioResult {
  double write_gbps = 0, read_gbps = 0;     ///< 1e9 bytes per second, fio's bw_bytes
  std::vector<std::string> write_command, read_command;
};

/// The fio executable on PATH, or nullopt.
std::optional<std::string> find_fio();
/// fio's command line for one pass (`write` or `read`) of `job`.
std::vector<std::string> fio_command(const std::string& fio, const FioJob& job, bool write);
/// Runs the write pass, then the read pass. Throws std::runtime_error naming the command and
/// fio's own message when fio fails or prints no result.
FioResult run_fio(const std::string& fio, const FioJob& job);
/// bw_bytes of the `write` or `read` part of fio's JSON report, in GB/s; throws on a malformed one.
double fio_bandwidth_gbps(const std::string& json_text, bool write);

}  // namespace shardscope::aio
