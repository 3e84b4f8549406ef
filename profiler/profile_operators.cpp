// The CPU operator analyses (profile_operators.hpp; docs/profiler.md "Analyses"); their text and
// JSON forms are in profile_analyses_format.cpp with the others.
#include "profiler/profile_operators.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "sessions/interval_set.hpp"

namespace shardscope::profiler {
namespace {

using sessions::IntervalSet;
using sessions::NvtxRange;

// One thread's operators by start, an enclosing operator before those it encloses.
using ThreadOps = std::vector<const NvtxRange*>;

std::map<std::int64_t, ThreadOps> operators_by_thread(const std::vector<NvtxRange>& ranges) {
  std::map<std::int64_t, ThreadOps> out;
  for (const auto& r : ranges)
    if (is_cpu_operator(r)) out[r.stream].push_back(&r);
  for (auto& [thread, ops] : out)
    std::sort(ops.begin(), ops.end(), [](const NvtxRange* a, const NvtxRange* b) {
      return std::tie(a->start_ns, b->end_ns) < std::tie(b->start_ns, a->end_ns);
    });
  return out;
}

// Self time as PyTorch counts it (self_cpu_time_total): an operator's duration less what its
// child operators on the same thread cover. A stack of the operators still open at each start.
std::vector<std::int64_t> self_times(const ThreadOps& ops) {
  std::vector<std::int64_t> self(ops.size());
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    self[i] = ops[i]->end_ns - ops[i]->start_ns;
    while (!open.empty() && ops[open.back()]->end_ns <= ops[i]->start_ns) open.pop_back();
    if (!open.empty()) {
      const NvtxRange& parent = *ops[open.back()];
      self[open.back()] -= std::min(ops[i]->end_ns, parent.end_ns) - ops[i]->start_ns;
    }
    open.push_back(i);
  }
  for (auto& s : self) s = std::max<std::int64_t>(s, 0);
  return self;
}

struct Group {
  std::int64_t calls = 0, total_ns = 0, self_ns = 0;
  std::optional<std::int64_t> forward_op_id;
};

bool is_step_window(const NvtxRange& r) {
  return r.device < 0 && r.domain == "user_annotation" && r.name.rfind("ProfilerStep#", 0) == 0;
}

}  // namespace

bool is_cpu_operator(const NvtxRange& range) { return range.domain == sessions::kCpuOpDomain; }

const char* operator_order_name(OperatorOrder order) { return order == OperatorOrder::kTotal ? "total" : "self"; }

TopOperatorsRank compute_top_operators(int rank, const std::vector<NvtxRange>& ranges, std::size_t top_n,
                                       OperatorOrder order) {
  std::map<std::pair<std::string, std::string>, Group> groups;  // (name, shapes)
  std::unordered_map<std::int64_t, const std::string*> name_of_external_id;
  TopOperatorsRank out;
  out.rank = rank;
  std::int64_t self_total = 0;
  for (const auto& [thread, ops] : operators_by_thread(ranges)) {
    const auto self = self_times(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const NvtxRange& op = *ops[i];
      Group& g = groups[{op.name, op.shapes}];
      ++g.calls;
      g.total_ns += op.end_ns - op.start_ns;
      g.self_ns += self[i];
      if (op.forward_op_id) {
        ++out.forward_backward_links;
        if (!g.forward_op_id) g.forward_op_id = op.forward_op_id;
      }
      if (op.external_id) name_of_external_id.emplace(*op.external_id, &op.name);
      self_total += self[i];
      ++out.operator_calls;
    }
  }
  out.self_time_ms = static_cast<double>(self_total) / kNsPerMs;
  out.distinct = groups.size();
  for (const auto& [key, g] : groups) {
    OperatorStat s;
    s.name = key.first;
    s.shapes = key.second;
    s.calls = g.calls;
    s.total_ms = static_cast<double>(g.total_ns) / kNsPerMs;
    s.self_ms = static_cast<double>(g.self_ns) / kNsPerMs;
    s.mean_us = static_cast<double>(g.total_ns) / static_cast<double>(g.calls) / 1000.0;
    s.self_share = self_total > 0 ? static_cast<double>(g.self_ns) / static_cast<double>(self_total) : 0;
    if (g.forward_op_id)
      if (auto it = name_of_external_id.find(*g.forward_op_id); it != name_of_external_id.end()) s.forward_op = *it->second;
    out.operators.push_back(std::move(s));
  }
  const bool by_total = order == OperatorOrder::kTotal;
  std::stable_sort(out.operators.begin(), out.operators.end(), [by_total](const OperatorStat& a, const OperatorStat& b) {
    return by_total ? a.total_ms > b.total_ms : a.self_ms > b.self_ms;
  });
  if (top_n > 0 && out.operators.size() > top_n) out.operators.resize(top_n);
  return out;
}

std::vector<HostIdle> compute_host_idle(int rank, const std::vector<NvtxRange>& ranges) {
  std::map<std::int64_t, IntervalSet> windows;
  for (const auto& r : ranges)
    if (is_step_window(r)) windows[r.stream].add(r.start_ns, r.end_ns);
  std::vector<HostIdle> out;
  for (const auto& [thread, ops] : operators_by_thread(ranges)) {
    IntervalSet busy;
    for (const auto* op : ops) busy.add(op->start_ns, op->end_ns);
    HostIdle h;
    h.rank = rank;
    h.thread = thread;
    h.operators = static_cast<std::int64_t>(ops.size());
    const auto w = windows.find(thread);
    h.step_windows = w != windows.end();
    const std::int64_t window_ns = h.step_windows ? w->second.measure() : busy.highest() - busy.lowest();
    const std::int64_t busy_ns = h.step_windows ? busy.intersection_measure(w->second) : busy.measure();
    h.window_ms = static_cast<double>(window_ns) / kNsPerMs;
    h.busy_ms = static_cast<double>(busy_ns) / kNsPerMs;
    h.idle_ms = h.window_ms - h.busy_ms;
    h.idle_fraction = window_ns > 0 ? h.idle_ms / h.window_ms : 0;
    out.push_back(h);
  }
  return out;
}

}  // namespace shardscope::profiler
