#include "tests/sessions/regression_fixtures.hpp"

#include <cmath>
#include <random>

#include "sessions/session_reader.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::sessions::testing {
namespace {

RunStart start_of(const SyntheticRun& r) {
  RunStart s;
  s.name = r.name;
  s.started_at = r.started_at;
  s.command_line = {"shardscope", "train", "--steps", std::to_string(r.steps)};
  s.command_line.insert(s.command_line.end(), r.train_flags.begin(), r.train_flags.end());
  s.config_json = r.config_json;
  s.config_hash = compute_config_hash(r.config_json);
  s.environment.versions.shardscope = r.shardscope_version;
  s.environment.versions.git_hash = r.git_hash;
  s.environment.versions.libtorch = "2.11.0";
  s.environment.versions.deepspeed = r.deepspeed_version;
  s.environment.accelerator.backend = "cuda";
  s.environment.accelerator.gpus.push_back({0, "NVIDIA H200", 150754820096ull, 9, 0, 132, true, true});
  s.environment.host.hostname = "node-a";
  s.world_size = 1;
  s.ranks.push_back({0, 0, "node-a", 1000, "cuda:0"});
  s.peak_tflops_per_gpu = 989;
  s.tags = r.tags;
  return s;
}

// Five kernels per step: two GEMMs, the LayerNorm backward, an elementwise kernel, an NCCL all-reduce.
ActivityBatch kernels_of(const SyntheticRun& r, std::int64_t step) {
  ActivityBatch b{0, {}};
  std::int64_t t = step * 1000000000LL;
  const auto add = [&](const std::string& name, double ms) {
    ActivityRecord a;
    a.name = name, a.start_ns = t, a.end_ns = t + static_cast<std::int64_t>(ms * 1e6), a.step = step;
    t = a.end_ns + 1000;
    b.records.push_back(a);
  };
  add("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", 25);
  add("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", 20);
  add("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float const*, int)",
      5 + r.layernorm_extra_ms);
  add("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)", 10);
  add("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 8);
  return b;
}

}  // namespace

std::vector<Event> synthetic_run(const SyntheticRun& r) {
  std::mt19937_64 rng(r.seed);
  std::normal_distribution<double> z(0, 1);
  const double sd = r.cv * r.step_ms;
  double noise = sd * z(rng);
  std::vector<Event> events{start_of(r)};
  for (int step = 0; step < r.steps; ++step) {
    noise = r.rho * noise + sd * std::sqrt(1 - r.rho * r.rho) * z(rng);
    const double warm = step < 3 ? 1.5 : 1.0;  // the first steps are slow (allocator growth, autotuning)
    const double ms = (r.step_ms + noise) * warm + r.layernorm_extra_ms;
    events.push_back(TimerBreakdown{0, step, {{"forward", 0.3 * (ms - r.layernorm_extra_ms)},
                                              {"backward", 0.6 * (ms - r.layernorm_extra_ms) + r.layernorm_extra_ms},
                                              {"step", 0.1 * (ms - r.layernorm_extra_ms)}}});
    events.push_back(CommRecord{0, step, "all_reduce", 1 << 20, 8000 * (1 + 0.02 * z(rng)), 130, 130, 1});
    if (r.profiled && step >= 20 && step < 25) events.push_back(kernels_of(r, step));
    StepMetrics m;
    m.step = step, m.wall_time = r.started_at + step;
    m.step_time_ms = ms;
    m.loss = r.loss_scale * (2.0 + 8.0 / (1.0 + 0.1 * step)) * (1 + 0.01 * z(rng));
    m.tokens_per_s = 4096 * 1000 / ms;
    m.samples_per_s = 4 * 1000 / ms;
    m.tflops = 400 * r.step_ms / ms;
    m.mem_allocated_bytes = r.peak_bytes / 2;
    m.mem_reserved_bytes = r.peak_bytes + (std::int64_t{1} << 28);
    m.mem_peak_bytes = step == 0 ? r.peak_bytes / 2 : r.peak_bytes;
    events.push_back(m);
  }
  events.push_back(RunEnd{"completed", r.started_at + r.steps, static_cast<double>(r.steps), {{0, 0}}});
  return events;
}

std::int64_t write_synthetic_run(Store& store, const SyntheticRun& run) {
  const std::string uid = "uid-" + run.name + "-" + std::to_string(run.seed);
  StoreWriter writer(store);
  writer.write(uid, synthetic_run(run));
  return find_session(store, uid);
}

}  // namespace shardscope::sessions::testing
