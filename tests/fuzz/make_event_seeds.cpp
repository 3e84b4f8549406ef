// Writes the collector_fuzzer's seed corpus: one file per event type (and one whole small run),
// each the byte stream a rank sends after its Hello, made by the real encoder; and, given a second
// folder, the collector_handshake_fuzzer's: what reaches the collector from a connection's first
// byte (a Hello whose proof is wrong, one followed by events, other protocols). Run it again when
// the wire format changes: build-fuzz/tests/fuzz/make_event_seeds tests/fuzz/corpus/collector_fuzzer
// tests/fuzz/corpus/collector_handshake_fuzzer
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

// First bytes of a connection: Hellos no fuzzer can prove (a proof under a key it does not know).
void write_handshake_seeds(const std::string& dir) {
  Hello hello;
  hello.protocol_version = kProtocolVersion;
  hello.rank = 1;
  hello.host = "node-a";
  hello.pid = 4242;
  hello.client_nonce.fill(7);
  hello.proof.fill(9);
  std::string frame;
  encode_hello(hello, frame);
  write(dir + "/hello.bin", frame);
  std::string then_events = frame;
  for (const auto& [name, event] : events()) encode_event(event, then_events);
  write(dir + "/hello_then_events.bin", then_events);
  write(dir + "/hello_half.bin", frame.substr(0, frame.size() / 2));
  hello.rank = -1;
  std::string launcher;
  encode_hello(hello, launcher);
  encode_event(run_start(), launcher);
  write(dir + "/launcher_hello_run_start.bin", launcher);
  std::string events_first;
  for (const auto& [name, event] : events()) encode_event(event, events_first);
  write(dir + "/events_without_hello.bin", events_first);
  write(dir + "/http.bin", "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  write(dir + "/huge_length.bin", std::string("\xff\xff\xff\x7f\x01", 5));
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: make_event_seeds DIR [HANDSHAKE_DIR]\n");
    return 2;
  }
  if (argc == 3) write_handshake_seeds(argv[2]);
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
