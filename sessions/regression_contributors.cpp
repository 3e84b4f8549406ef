// Down to the kernel: which kernel families, collectives and phases moved, with their share of the
// step-time change ("3 % slower, of which 2.1 % is the LayerNorm backward").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "sessions/activity_stats.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/regression_internal.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::sessions {
namespace {

void erase_all(std::string& s, const std::string& what) {
  for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what)) s.erase(pos, what.size());
}

// Drops <...> (nested) and everything from the first '(' outside them: the template and call arguments.
std::string without_arguments(const std::string& s) {
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') ++depth;
    else if (c == '>') depth = std::max(0, depth - 1);
    else if (c == '(' && depth == 0) break;
    else if (depth == 0) out += c;
  }
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string kernel_family(const std::string& kernel_name) {
  std::string s = kernel_name;
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  if (s.rfind("nccl", 0) == 0) {  // ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_AllGather_RING_LL_...
    const auto a = s.find('_');
    const auto b = a == std::string::npos ? a : s.find_first_of("_(", a + 1);
    return a == std::string::npos ? "nccl" : "nccl:" + s.substr(a + 1, b == std::string::npos ? b : b - a - 1);
  }
  erase_all(s, "(anonymous namespace)::");
  s = without_arguments(s);
  const std::string l = lower(s);
  // cuBLAS and CUTLASS name one GEMM per tile shape and arch (cuBLASLt's Hopper kernels are
  // `nvjet_sm90_tst_256x128_...`); the family is what a user can act on.
  if (l.find("gemm") != std::string::npos || l.rfind("cutlass", 0) == 0 || l.find("cublas") != std::string::npos ||
      l.rfind("nvjet_", 0) == 0)
    return "gemm";
  // cuDNN's fused attention, likewise one name per tile and knob:
  // cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_...
  if (l.rfind("cudnn_generated", 0) == 0 && l.find("sdpa") != std::string::npos)
    return l.find("bprop") != std::string::npos ? "cudnn sdpa backward" : "cudnn sdpa forward";
  return s.empty() ? kernel_name : s;
}

namespace detail {
namespace {

// ms per step of each kernel family on one session: per rank the family's time over the steps its
// records fall in, then the mean over ranks. nullopt when the session has no profiled window or
// its records carry no steps.
std::optional<std::map<std::string, double>> kernel_ms_per_step(Store& store, std::int64_t id) {
  const auto ranks = load_activity_ranks(store, id);
  if (ranks.empty()) return std::nullopt;
  std::map<std::string, double> out;
  for (int rank : ranks) {
    // The summaries (schema 11) rather than every record: the sums are of whole nanoseconds, so
    // adding per name, then per family, is exact.
    const RankActivityStats stats = load_activity_stats(store, id, rank);
    if (stats.steps.empty()) return std::nullopt;
    std::map<std::string, double> ns;
    for (const auto& n : stats.names)
      if (n.stepped_calls > 0)
        ns[n.kind == ActivityKind::kKernel ? kernel_family(n.name) : n.name] += static_cast<double>(n.stepped_ns);
    for (const auto& [family, total] : ns)
      out[family] += total / 1e6 / static_cast<double>(stats.steps.size()) / static_cast<double>(ranks.size());
  }
  return out;
}

std::optional<std::map<std::string, double>> group_kernels(Store& store, const std::vector<std::int64_t>& ids) {
  std::map<std::string, double> out;
  for (auto id : ids) {
    const auto one = kernel_ms_per_step(store, id);
    if (!one) return std::nullopt;
    for (const auto& [family, ms] : *one) out[family] += ms / static_cast<double>(ids.size());
  }
  return out;
}

Contributor make(const std::string& kind, const std::string& name, double a, double b, double step_ms, double step_delta) {
  Contributor c{kind, name, a, b, b - a, std::nullopt, step_ms > 0 ? 100.0 * (b - a) / step_ms : 0.0};
  if (std::fabs(step_delta) > 1e-12) c.share_of_change = (b - a) / step_delta;
  return c;
}

void keep_top(std::vector<Contributor>& kind_rows, std::size_t top, std::vector<Contributor>& out) {
  std::stable_sort(kind_rows.begin(), kind_rows.end(),
                   [](const Contributor& x, const Contributor& y) { return std::fabs(x.delta_ms) > std::fabs(y.delta_ms); });
  if (top && kind_rows.size() > top) kind_rows.resize(top);
  out.insert(out.end(), kind_rows.begin(), kind_rows.end());
}

}  // namespace

std::vector<Contributor> regression_contributors(Store& store, const std::vector<std::int64_t>& baseline,
                                                 const std::vector<std::int64_t>& candidate,
                                                 const std::vector<MetricVerdict>& metrics, std::size_t top,
                                                 bool& profiled, std::vector<std::string>& notes) {
  double step_ms = 0, step_delta = 0;
  std::vector<Contributor> phases, collectives, kernels;
  for (const auto& m : metrics) {
    if (m.metric == "step_time") step_ms = m.baseline, step_delta = m.candidate - m.baseline;
    if (m.metric.rfind("phase:", 0) == 0) phases.push_back(make("phase", m.metric.substr(6), m.baseline, m.candidate, 0, 0));
    if (m.metric.rfind("comm:", 0) == 0)
      collectives.push_back(make("collective", m.metric.substr(5), m.baseline, m.candidate, 0, 0));
  }
  for (auto* rows : {&phases, &collectives})
    for (auto& c : *rows) c = make(c.kind, c.name, c.baseline_ms, c.candidate_ms, step_ms, step_delta);
  const auto a = group_kernels(store, baseline), b = group_kernels(store, candidate);
  profiled = a && b;
  if (profiled) {
    std::set<std::string> families;
    for (const auto* g : {&*a, &*b})
      for (const auto& [family, ms] : *g) families.insert(family);
    for (const auto& f : families) {
      const double x = a->count(f) ? a->at(f) : 0.0, y = b->count(f) ? b->at(f) : 0.0;
      (f.rfind("nccl", 0) == 0 ? collectives : kernels).push_back(make(f.rfind("nccl", 0) == 0 ? "collective" : "kernel", f, x, y, step_ms, step_delta));
    }
  } else {
    notes.push_back("kernel families: not every session has a profiled window with steps (train --profile-steps)");
  }
  std::vector<Contributor> out;
  keep_top(kernels, top, out);
  keep_top(collectives, top, out);
  keep_top(phases, top, out);
  return out;
}

}  // namespace detail
}  // namespace shardscope::sessions
