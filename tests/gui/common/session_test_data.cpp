#include "tests/gui/common/session_test_data.hpp"

#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::gui::testing {

namespace ss = shardscope::sessions;

std::int64_t profiled_window_start_ns(const RunSpec& spec) {
  return static_cast<std::int64_t>(spec.started_at + 5) * 1'000'000'000 - 60'000'000;
}

std::string host_of(const RunSpec& spec, int rank) {
  if (spec.hosts.empty()) return spec.host;
  const int per_host = (spec.ranks + static_cast<int>(spec.hosts.size()) - 1) / static_cast<int>(spec.hosts.size());
  return spec.hosts[static_cast<std::size_t>(rank / per_host)];
}

namespace {

// What a multi-host launcher reports per host: node rank, clock offset, build and ranks.
std::vector<ss::Event> host_reports(const RunSpec& spec, const std::vector<ss::RankInfo>& ranks) {
  std::vector<ss::Event> events;
  for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
    ss::HostReport report;
    report.host = spec.hosts[i];
    report.node_rank = static_cast<int>(i);
    if (i < spec.clock_offsets_s.size()) {
      report.clock_offset_s = spec.clock_offsets_s[i];
      report.clock_uncertainty_s = 0.0002;
    }
    report.shardscope_version = spec.host_version;
    report.git_hash = "abc1234";
    for (const auto& r : ranks)
      if (r.host == report.host) report.ranks.push_back(r);
    events.push_back(report);
  }
  return events;
}

}  // namespace

std::vector<ss::Event> run_events(const RunSpec& spec) {
  ss::RunStart start;
  start.name = spec.name;
  start.started_at = spec.started_at;
  start.command_line = {"shardscope", "train", "--name", spec.name};
  start.command_line.insert(start.command_line.end(), spec.train_args.begin(), spec.train_args.end());
  start.config_json = spec.config_json;
  start.config_hash = ss::compute_config_hash(spec.config_json);
  start.environment.versions.shardscope = "0.1.0";
  start.environment.versions.libtorch = "2.11.0";
  start.environment.accelerator.backend = "cuda";
  start.environment.host.hostname = spec.host;
  start.world_size = spec.ranks;
  for (int r = 0; r < spec.ranks; ++r) start.ranks.push_back({r, r, host_of(spec, r), 4000 + r, "cuda:" + std::to_string(r)});
  start.peak_tflops_per_gpu = 100;
  std::vector<ss::Event> events{start};
  for (auto& report : host_reports(spec, start.ranks)) events.push_back(std::move(report));
  for (int step = 1; step <= spec.steps; ++step)
    for (int rank = 0; rank < spec.ranks; ++rank) {
      ss::StepMetrics m;
      m.rank = rank;
      m.step = step;
      m.wall_time = spec.started_at + step;
      m.step_time_ms = spec.step_ms + 5 * rank;
      m.loss = spec.loss0 / (1 + step / 10.0);
      m.lr = 1e-3 * step / spec.steps;
      m.loss_scale = 65536;
      m.grad_norm = 1 + 0.01 * step;
      if (spec.tokens) m.tokens_per_s = 1000;
      m.samples_per_s = 4;
      m.tflops = spec.tflops;
      m.mem_allocated_bytes = m.mem_peak_bytes = (std::int64_t(rank) + 1) << 30;
      m.mem_reserved_bytes = (std::int64_t(rank) + 2) << 30;
      events.push_back(ss::TimerBreakdown{rank, step, {{"forward", 0.3 * spec.step_ms}, {"backward", 0.6 * spec.step_ms}}});
      events.push_back(ss::CommRecord{rank, step, "all_reduce", 1 << 20, 2000, 0.5, 0.5, spec.ranks});
      events.push_back(m);
    }
  if (spec.profiled)
    for (int rank = 0; rank < spec.ranks; ++rank) {
      // Inside step 5 on the host Unix clock, as CUPTI records are stored: 60 ms before its end.
      const std::int64_t t0 = profiled_window_start_ns(spec) + rank * 1000;
      events.push_back(ss::ActivityBatch{rank, {{ss::ActivityKind::kKernel, "ampere_sgemm_128x64", t0, t0 + 40'000, 0, 7, 0, 5},
                                                {ss::ActivityKind::kKernel, "ampere_sgemm_128x64", t0 + 50'000, t0 + 90'000, 0, 7, 0, 5},
                                                {ss::ActivityKind::kKernel, "vectorized_elementwise", t0 + 95'000, t0 + 100'000, 0, 7, 0, 5},
                                                {ss::ActivityKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32", t0 + 60'000, t0 + 120'000, 0, 13, 0, 5},
                                                {ss::ActivityKind::kMemcpy, "HtoD", t0 - 10'000, t0 - 2'000, 0, 7, 8 << 20, 5}}});
      events.push_back(ss::NvtxBatch{rank, {{"step", "shardscope", t0 - 12'000, t0 + 125'000, -1, 1, 5},
                                            {"forward", "shardscope", t0, t0 + 45'000, -1, 1, 5},
                                            {"backward", "shardscope", t0 + 48'000, t0 + 100'000, -1, 1, 5}}});
    }
  events.push_back(ss::LogLine{0, spec.started_at + 1, ss::LogLevel::kInfo, "step 1 done"});
  for (const auto& f : spec.findings) events.push_back(f);
  std::vector<ss::RankExit> exits;
  for (int r = 0; r < spec.ranks; ++r) exits.push_back({r, 0});
  events.push_back(ss::RunEnd{"completed", spec.started_at + spec.steps + 1, double(spec.steps + 1), exits});
  return events;
}

std::vector<std::string> write_sessions(const QString& path, const std::vector<RunSpec>& runs) {
  ss::Store store = ss::Store::open_or_create(path.toStdString());
  ss::StoreWriter writer(store);
  std::vector<std::string> uids;
  for (const auto& run : runs) {
    uids.push_back("uid-" + run.name + "-0123456789");
    writer.write(uids.back(), run_events(run));
  }
  return uids;
}

}  // namespace shardscope::gui::testing
