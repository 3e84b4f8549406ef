#pragma once
// Drawing comparisons into QCustomPlot: one plot per metric with every session overlaid (raw
// curve faint when smoothing is on, smoothed curve on top, as TensorBoard draws them), and the
// median step-time breakdown per session as grouped bars.

#include <QColor>
#include <QString>

#include "app/gui/compare_data.hpp"

class QCustomPlot;

namespace shardscope::gui {

/// The colour of the i-th compared session (or rank), from a palette that survives greyscale.
QColor series_color(std::size_t index);
/// A metric's axis title with its unit ("step time (ms)", "memory peak (GiB)").
QString metric_title(const std::string& metric);
/// How a metric's raw values are scaled for display (bytes to GiB, else 1).
double metric_scale(const std::string& metric);

struct CurveStyle {
  bool log_scale = false;
  bool show_raw = true;  ///< the unsmoothed curve, faint, under the smoothed one
};

/// Redraws `plot` with one curve per session of `curve`.
void draw_compare_curve(QCustomPlot* plot, const PlotCurve& curve, const std::vector<SessionRef>& sessions,
                        const CurveStyle& style);
/// Grouped bars: per timer, one bar per session of its median milliseconds per step.
void draw_timer_breakdown(QCustomPlot* plot, const std::vector<sessions::SessionSummary>& summaries,
                          const std::vector<SessionRef>& sessions);

}  // namespace shardscope::gui
