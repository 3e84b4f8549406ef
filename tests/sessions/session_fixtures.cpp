#include "tests/sessions/session_fixtures.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardscope::sessions::testing {

std::string temp_path(const std::string& stem) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() / "shardscope_sessions_tests";
  std::filesystem::create_directories(dir);
  const auto path = dir / (stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  remove_store(path.string());
  return path.string();
}

void remove_store(const std::string& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove_all(path + suffix, ignored);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

RunStart sample_run_start(const std::string& name, int world_size, const std::string& config_json) {
  RunStart start;
  start.name = name;
  start.started_at = 1795900000;  // 2026-11-28
  start.command_line = {"shardscope", "train", "--config", name + ".json"};
  start.config_json = config_json;
  start.environment.versions.shardscope = "0.1.0";
  start.environment.versions.git_hash = "abc1234";
  start.environment.versions.libtorch = "2.11.0";
  start.environment.accelerator.backend = "cuda";
  start.environment.accelerator.gpus.push_back({0, "NVIDIA H200", 150754820096ull, 9, 0, 132, true, true});
  start.environment.host.hostname = "node-a";
  start.world_size = world_size;
  for (int r = 0; r < world_size; ++r) start.ranks.push_back({r, r, "node-a", 1000 + r, "cuda:" + std::to_string(r)});
  start.peak_tflops_per_gpu = 100;
  start.tags = {"baseline"};
  return start;
}

std::vector<Event> two_host_run(const std::string& name, const HostClock& node_a, const HostClock& node_b) {
  RunStart start = sample_run_start(name, 2, "{}");
  start.ranks[1].host = "node-b";
  std::vector<Event> events{start};
  const HostClock* clocks[] = {&node_a, &node_b};
  for (int node = 0; node < 2; ++node) {
    HostReport host;
    host.host = start.ranks[node].host;
    host.node_rank = node;
    host.clock_offset_s = clocks[node]->offset_s;
    host.clock_uncertainty_s = clocks[node]->uncertainty_s;
    host.shardscope_version = "0.1.0";
    host.git_hash = "abc1234";
    host.ranks = {start.ranks[node]};
    events.push_back(host);
  }
  return events;
}

std::vector<Event> sample_steps(int world_size, int steps) {
  std::vector<Event> events;
  for (int step = 0; step < steps; ++step) {
    for (int rank = 0; rank < world_size; ++rank) {
      events.push_back(TimerBreakdown{rank, step, {{"forward", 30}, {"backward", 60}}});
      events.push_back(CommRecord{rank, step, "all_reduce", 1000000, 10000, 100, 175, world_size});
      StepMetrics m;
      m.rank = rank;
      m.step = step;
      m.wall_time = 1795900000 + step;
      m.step_time_ms = rank == 0 ? 100.0 + step : 100.0 + 2 * step;
      if (rank == 0) {
        m.loss = 10.0 - step;
        m.lr = 1e-3;
        m.loss_scale = 65536;
        m.grad_norm = 1.5;
      }
      m.skipped = rank == 1 && step == 3;
      m.samples_per_s = 10;
      m.tokens_per_s = 1000;
      m.tflops = 50;
      m.mem_allocated_bytes = static_cast<std::int64_t>(rank + 1) << 29;
      m.mem_reserved_bytes = static_cast<std::int64_t>(rank + 2) << 30;
      m.mem_peak_bytes = static_cast<std::int64_t>(rank + 1) << 30;
      events.push_back(m);
    }
  }
  return events;
}

}  // namespace shardscope::sessions::testing
