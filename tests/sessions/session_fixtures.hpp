#pragma once
// Small, fully known sessions for the sessions tests: every number here is chosen so the expected
// summaries can be worked out by hand in the tests.

#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions::testing {

/// A unique path under the test temp dir (removed with its -wal/-shm by remove_store()).
std::string temp_path(const std::string& stem);
void remove_store(const std::string& path);
/// The bytes of a file (to prove a rejected file was not modified).
std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

/// A RunStart with a two-key config, `world_size` ranks on host "node-a", and tag "baseline".
RunStart sample_run_start(const std::string& name, int world_size, const std::string& config_json);
/// One host's clock as a launcher measured it (HostReport::clock_offset_s, clock_uncertainty_s).
struct HostClock {
  std::optional<double> offset_s;
  std::optional<double> uncertainty_s;
};
/// A run on two hosts as a multi-host launcher records it: sample_run_start(name, 2, "{}") with
/// rank 0 on "node-a" and rank 1 on "node-b", and one HostReport per host (node 0 and node 1,
/// build 0.1.0 (abc1234)) carrying the given clocks.
std::vector<Event> two_host_run(const std::string& name, const HostClock& node_a, const HostClock& node_b);
/// Steps 0..steps-1 for every rank: loss = 10 - step (rank 0 only), step_time 100 + step ms on
/// rank 0 and 100 + 2*step on the others, 1000 tokens/s per rank, 50 TFLOP/s, peak memory
/// (rank + 1) GiB, step 3 skipped by rank 1; timers forward=30, backward=60 ms; one all_reduce of
/// 1 MB taking 10 ms per step per rank.
std::vector<Event> sample_steps(int world_size, int steps);

}  // namespace shardscope::sessions::testing
