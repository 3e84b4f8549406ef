#pragma once
// Sessions written by the GUI tests with the sessions library: known numbers, so the tables and
// curves the pages show can be checked against values worked out here or by the library itself.

#include <QString>
#include <QTemporaryDir>

#include "sessions/events.hpp"

namespace shardscope::gui::testing {

struct RunSpec {
  std::string name;
  int ranks = 2;
  int steps = 20;
  double step_ms = 100;          ///< rank 0's step time; rank r takes step_ms + 5 r
  double loss0 = 8;              ///< loss(step) = loss0 / (1 + step / 10)
  std::string config_json = R"({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}})";
  std::string host = "node-a";
  /// A multi-host run: ranks split in blocks over these hosts (node rank = index), each reported
  /// by a HostReport with the clock offset of the same index (none past the list's end).
  std::vector<std::string> hosts;
  std::vector<double> clock_offsets_s;
  std::string host_version = "0.1.0";
  bool tokens = true;            ///< false: samples/s alone, as DeepSpeed's throughput line gives
  double tflops = 40;            ///< 0: what a CPU run reports
  bool profiled = false;         ///< add a kernel/memcpy/NCCL/NVTX window in step 5 of every rank
  double started_at = 1795900000;
  std::vector<std::string> train_args;  ///< appended to the recorded `shardscope train` command line
  std::vector<sessions::Finding> findings;  ///< stored before the run's end, as the launcher stores its doctor's
};

/// Where a profiled run's first kernel starts on rank 0 (host Unix ns, 60 ms before step 5 ends);
/// rank r's records are r us later.
std::int64_t profiled_window_start_ns(const RunSpec& spec);
/// The host rank `rank` runs on.
std::string host_of(const RunSpec& spec, int rank);
/// The events of one run as a rank-level recorder would send them (RunStart ... RunEnd).
std::vector<sessions::Event> run_events(const RunSpec& spec);
/// Writes the runs into `path` (created); returns the uids in order.
std::vector<std::string> write_sessions(const QString& path, const std::vector<RunSpec>& runs);

}  // namespace shardscope::gui::testing
