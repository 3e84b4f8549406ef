#pragma once
// The profile view's panes without widgets of their own: the profiler's analyses
// (profiler/profile_analyses.hpp, what `sessions show --profile` prints) as table rows and as
// QCustomPlot charts: the time per phase as a stacked bar per rank, communication hidden and
// exposed as a stacked bar per rank. The view fills them for the whole session or a selection.

#include <vector>

#include <QStringList>
#include <QVariantList>

#include "profiler/profile_analyses.hpp"
#include "sessions/session_summary.hpp"

class QCustomPlot;

namespace shardscope::gui {

struct TableRows {
  QStringList headers;
  std::vector<QVariantList> rows;
};

/// Per rank: the mean ms per step of every timer column (top-level ones summed into the step,
/// the others marked *), the "other" and the step time, over the steps counted.
TableRows phase_rows(const profiler::PhaseBreakdown& phases);
/// Per rank: method, communication, hidden and exposed ms, hidden %, collectives, note.
TableRows overlap_rows(const std::vector<profiler::CommOverlapRank>& ranks);
/// Per rank and kernel: calls, total ms, mean us, share %, communication.
TableRows kernel_rows(const std::vector<profiler::TopKernelsRank>& ranks);
/// Per op: count, bytes, time, mean bandwidths.
TableRows collective_rows(const std::vector<sessions::CommOpStat>& ops);
/// Per rank and device: window, busy, idle ms and idle %.
TableRows idle_rows(const std::vector<profiler::DeviceIdle>& devices);
/// Per step: ranks, the slowest rank, slowest / median / fastest ms and the lag.
TableRows straggler_rows(const profiler::StragglerAnalysis& stragglers);

/// Stacked bars, one per rank: each top-level phase's mean ms, then "other"; with a legend.
void draw_phase_chart(QCustomPlot* plot, const profiler::PhaseBreakdown& phases);
/// Stacked bars, one per rank: hidden and exposed communication ms; with a legend.
void draw_overlap_chart(QCustomPlot* plot, const std::vector<profiler::CommOverlapRank>& ranks);

}  // namespace shardscope::gui
