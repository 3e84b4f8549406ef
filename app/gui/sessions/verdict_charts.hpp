#pragma once
// The Verdict and Trend tabs' charts: each metric's change with its 95 % interval as a horizontal
// bar (a forest plot: the point in its verdict's colour, 0 and the threshold on the worse side
// marked), and a metric over groups of sessions with each group's interval and the steps
// (regressions and improvements against the group before) marked.

#include "app/gui/sessions/verdict_data.hpp"

class QCustomPlot;

namespace shardscope::gui {

/// Redraws `plot` with one row per metric of `report`, the first at the top, changes in percent.
void draw_verdict_intervals(QCustomPlot* plot, const sessions::RegressionReport& report);

/// Redraws `plot` with `view`'s groups left to right (oldest first), values over axis_scale.
void draw_trend(QCustomPlot* plot, const TrendView& view);

}  // namespace shardscope::gui
