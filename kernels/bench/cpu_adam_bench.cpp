// shardscope_bench_cpu_adam: times cpu_adam_step on N fp32 elements, nccl-tests style: a header,
// one fixed-column row per SIMD level, an OK/FAILED footer, and --json for scripts
// (scripts/bench_cpu_adam.py runs this beside torch's CPU AdamW). Exit 1 when a level is slower
// than --min-gbps; exit 2 on bad flags.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu_adam.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/kernel_error.hpp"

namespace {

using shardscope::kernels::SimdLevel;

struct BenchOptions {
  std::size_t elements = 100'000'000;
  int steps = 10;
  int warmup = 2;
  double min_gbps = 0.0;
  bool json = false;
  std::string simd = "all";  ///< "all", "scalar", "avx2", "avx512"
};

struct Row {
  SimdLevel level;
  double ms_per_step;
  double gbps;
};

// Bytes one Adam step moves per element: params, exp_avg, exp_avg_sq read and written (24),
// fp32 grads read (4).
constexpr double kBytesPerElement = 28.0;

void usage_error(const std::string& message) {
  std::fprintf(stderr, "shardscope_bench_cpu_adam: %s\n"
               "usage: shardscope_bench_cpu_adam [--elements N] [--steps S] [--warmup W] "
               "[--simd all|scalar|avx2|avx512] [--min-gbps X] [--json]\n", message.c_str());
  std::exit(2);
}

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    try {
      if (flag == "--elements") o.elements = std::stoull(value());
      else if (flag == "--steps") o.steps = std::stoi(value());
      else if (flag == "--warmup") o.warmup = std::stoi(value());
      else if (flag == "--min-gbps") o.min_gbps = std::stod(value());
      else if (flag == "--simd") o.simd = value();
      else if (flag == "--json") o.json = true;
      else usage_error("unknown flag " + flag);
    } catch (const std::logic_error&) {
      usage_error("bad number for " + flag);
    }
  }
  if (o.steps < 1) usage_error("--steps must be >= 1");
  return o;
}

std::vector<SimdLevel> levels_to_run(const std::string& simd) {
  using shardscope::kernels::available_simd_levels;
  if (simd == "all") return available_simd_levels();
  if (simd == "scalar") return {SimdLevel::kScalar};
  if (simd == "avx2") return {SimdLevel::kAvx2};
  if (simd == "avx512") return {SimdLevel::kAvx512};
  usage_error("--simd must be all, scalar, avx2 or avx512, not " + simd);
  return {};
}

Row time_level(SimdLevel level, const BenchOptions& o) {
  using namespace shardscope::kernels;
  std::vector<float> params(o.elements, 0.5f), grads(o.elements, 0.01f), m(o.elements, 0.0f), v(o.elements, 0.0f);
  const FlatParams flat{params.data(), {grads.data(), Dtype::kFloat32}, {}, o.elements};
  AdamOptions adam;
  adam.weight_decay = 0.01;
  std::int64_t step = 1;
  for (int i = 0; i < o.warmup; ++i) cpu_adam_step(adam, flat, {m.data(), v.data()}, step++, level);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps; ++i) cpu_adam_step(adam, flat, {m.data(), v.data()}, step++, level);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ms = seconds * 1e3 / o.steps;
  return {level, ms, kBytesPerElement * o.elements / (ms * 1e-3) / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardscope::kernels;
  const BenchOptions o = parse(argc, argv);
  std::vector<Row> rows;
  try {
    for (SimdLevel level : levels_to_run(o.simd)) rows.push_back(time_level(level, o));
  } catch (const KernelError& e) {
    std::fprintf(stderr, "shardscope_bench_cpu_adam: %s\n", e.what());
    return 2;
  }
  bool ok = true;
  for (const Row& r : rows) ok = ok && r.gbps >= o.min_gbps;
  if (o.json) {
    std::printf("{\"elements\": %zu, \"steps\": %d, \"threads\": %d, \"ok\": %s, \"rows\": [", o.elements, o.steps,
                cpu_thread_count(), ok ? "true" : "false");
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::printf("%s{\"simd\": \"%s\", \"ms_per_step\": %.4f, \"gbps\": %.3f}", i ? ", " : "",
                  simd_level_name(rows[i].level).c_str(), rows[i].ms_per_step, rows[i].gbps);
    std::printf("]}\n");
    return ok ? 0 : 1;
  }
  std::printf("# cpu_adam: %zu fp32 elements, %d timed steps after %d warm-up, %d OpenMP threads\n", o.elements,
              o.steps, o.warmup, cpu_thread_count());
  std::printf("# %10s %14s %12s\n", "simd", "time(ms/step)", "mem(GB/s)");
  for (const Row& r : rows)
    std::printf("  %10s %14.3f %12.2f\n", simd_level_name(r.level).c_str(), r.ms_per_step, r.gbps);
  std::printf("# %s%s\n", ok ? "OK" : "FAILED", ok || o.min_gbps <= 0 ? "" : ": below --min-gbps");
  return ok ? 0 : 1;
}
