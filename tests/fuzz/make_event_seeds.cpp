// Writes the collector_fuzzer's seed corpus: one file per event type (and one whole small run),
// each the byte stream a rank sends after its Hello, made by the real encoder. Run it again when
// the wire format changes: build-fuzz/tests/fuzz/make_event_seeds tests/fuzz/corpus/collector_fuzzer
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "sessions/event_codec.hpp"

namespace {

using namespace shardscope::sessions;

RunStart run_start() {
  RunStart s;
  s.name = "seed-run";
  s.started_at = 1764500000;
  s.command_line = {"shardscope", "train", "--config", "ds_config.json", "--steps", "3"};
  s.config_json = R"({"train_batch_size": 8, "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})";
  s.world_size = 2;
  s.ranks = {{0, 0, "node-a", 4242, "cpu"}, {1, 1, "node-a", 4243, "cpu"}};
  s.environment.versions.shardscope = "0.1.0";
  s.environment.accelerator.backend = "cpu";
  s.tags = {"seed"};
  return s;
}

std::vector<std::pair<std::string, Event>> events() {
  StepMetrics step;
  step.rank = 1;
  step.step = 1;
  step.wall_time = 1764500001;
  step.step_time_ms = 12.5;
  step.loss = 10.8;
  step.lr = 1e-4;
  step.grad_norm = 0.9;
  step.mem_peak_bytes = 1 << 20;
  ActivityRecord kernel;
  kernel.name = "ampere_sgemm_128x64_tn";
  kernel.start_ns = 1000;
  kernel.end_ns = 5000;
  kernel.grid = Dim3{64, 1, 1};
  kernel.block = Dim3{256, 1, 1};
  kernel.correlation_id = 7;
  ActivityRecord copy;
  copy.kind = ActivityKind::kMemcpy;
  copy.name = "HtoD";
  copy.bytes = 4096;
  copy.throughput_gbps = 12.0;
  return {{"run_start", run_start()},
          {"step_metrics", step},
          {"timer_breakdown", TimerBreakdown{1, 1, {{"forward", 3.5}, {"backward", 7.0}, {"step", 1.0}}}},
          {"comm_record", CommRecord{1, 1, "all_reduce", 1 << 20, 850.0, 1.23, 1.23, 2}},
          {"activity_batch", ActivityBatch{1, {kernel, copy}}},
          {"nvtx_batch", NvtxBatch{1, {{"forward", "", 100, 900, 0, 7, 1}}}},
          {"log_line", LogLine{1, 1764500001, LogLevel::kWarning, "step 1: loss scale lowered"}},
          {"run_end", RunEnd{"completed", 1764500010, 10.0, {{0, 0}, {1, 0}}}}};
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) std::perror(path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_event_seeds DIR\n");
    return 2;
  }
  std::string whole_run;
  for (const auto& [name, event] : events()) {
    std::string frame;
    encode_event(event, frame);
    write(std::string(argv[1]) + "/" + name + ".bin", frame);
    whole_run += frame;
  }
  write(std::string(argv[1]) + "/whole_run.bin", whole_run);
  return 0;
}
