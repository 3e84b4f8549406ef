#pragma once
// Analyses of the CPU operators of a profiled window (the cpu_op ranges a PyTorch profiler trace
// brings, issue 34; docs/profiler.md "Analyses" (f) and (g)): the top operators by self or total
// time with their input shapes and forward ops, and each host thread's time outside any operator
// in its ProfilerStep windows: where a ZeRO-3 run's hooks and Python show.

#include <cstdint>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::profiler {

/// CUPTI and NVTX times are nanoseconds; the analyses report milliseconds.
inline constexpr double kNsPerMs = 1e6;

/// How the top operators are ranked: self time (less the operators each one called, PyTorch's
/// self CPU time) or total time (inclusive).
enum class OperatorOrder { kSelf, kTotal };

// ---- (f) top CPU operators ----------------------------------------------------------------------

/// The calls of one operator with one list of input shapes.
struct OperatorStat {
  std::string name;
  std::string shapes;        ///< "Input Dims" as recorded ("[[8,16],[32,16],[32]]"); "" when not recorded
  std::int64_t calls = 0;
  double total_ms = 0;       ///< inclusive: the operator and the operators it called
  double self_ms = 0;        ///< exclusive: total less its child operators on the same thread
  double mean_us = 0;        ///< total / calls
  double self_share = 0;     ///< self / the rank's summed self time, 0..1
  std::string forward_op;    ///< a backward operator: the forward operator its first linked call is the gradient of
};

struct TopOperatorsRank {
  int rank = 0;
  std::int64_t operator_calls = 0;   ///< CPU operator ranges of the rank
  double self_time_ms = 0;           ///< summed self time = time inside operators
  std::size_t distinct = 0;          ///< (name, shapes) groups
  std::int64_t forward_backward_links = 0;  ///< calls that name their forward operator
  std::vector<OperatorStat> operators;      ///< ranked by the order asked, at most top_operators
};

// ---- (g) host time outside operators ------------------------------------------------------------

/// One host thread of a rank with CPU operators.
struct HostIdle {
  int rank = 0;
  std::int64_t thread = 0;       ///< the trace's tid
  bool step_windows = false;     ///< the window is the thread's ProfilerStep#N ranges (else first op to last)
  double window_ms = 0;
  double busy_ms = 0;            ///< union of its operators' intervals inside the window
  double idle_ms = 0;            ///< window - busy: Python, hooks, waits outside any aten op
  double idle_fraction = 0;      ///< idle / window, 0..1
  std::int64_t operators = 0;    ///< operator calls on the thread
};

/// True for a range that is a CPU operator (domain sessions::kCpuOpDomain).
bool is_cpu_operator(const sessions::NvtxRange& range);
/// (f) from one rank's ranges (other domains are ignored); top_n 0 = every group.
TopOperatorsRank compute_top_operators(int rank, const std::vector<sessions::NvtxRange>& ranges, std::size_t top_n,
                                       OperatorOrder order = OperatorOrder::kSelf);
/// (g) per thread of one rank's ranges that has CPU operators, by thread.
std::vector<HostIdle> compute_host_idle(int rank, const std::vector<sessions::NvtxRange>& ranges);
/// "self", "total".
const char* operator_order_name(OperatorOrder order);

}  // namespace shardscope::profiler
