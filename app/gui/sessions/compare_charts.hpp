#pragma once
// Drawing comparisons into QCustomPlot: one plot per metric with every session overlaid (raw
// curve faint when smoothing is on, smoothed curve on top, as TensorBoard draws them), and the
// median step-time breakdown per session as grouped bars.

#include <QColor>
#include <QString>

#include "app/gui/sessions/compare_data.hpp"

class QCustomPlot;

namespace shardscope::gui {

/// The colour of the i-th compared session (or rank), from a palette that survives greyscale.
QColor series_color(std::size_t index);
/// A metric's axis title with its unit ("step time (ms)", "memory peak (GiB)"); memory in `memory_unit`.
QString metric_title(const std::string& metric, const QString& memory_unit = "GiB");
/// True for the metrics in bytes (mem_allocated, mem_reserved, mem_peak).
bool is_memory_metric(const std::string& metric);

/// The unit a chart of bytes is drawn in, chosen from its largest value as the tables choose theirs:
/// GiB from 1 GiB up, else MiB from 1 MiB, else KiB, else B (a CPU run's 3 MiB is "3", not "0.00295").
struct ByteUnit {
  double divisor = 1;
  QString name = "B";
};
ByteUnit byte_unit_for(double largest_bytes);
/// The largest finite |value| of every series of `curve` (0 when none).
double largest_value(const PlotCurve& curve);

struct CurveStyle {
  bool log_scale = false;
  bool show_raw = true;  ///< the unsmoothed curve, faint, under the smoothed one
};

/// Sets the value axis to the curve's values with room above and below (5-6 %, at least 2 % of the
/// magnitude, so a flat curve sits inside the frame); a log axis labels powers of ten only when the
/// values span a decade (else plain numbers), as many ticks as the height holds, never the same
/// label twice (chart_tickers.hpp); no value at all gives a plain 0..1.
void fit_value_axis(QCustomPlot* plot, const PlotCurve& curve, double scale, bool log_scale);
/// The step axis over the curve's steps: integer ticks, and a single step (or none) centred in a
/// range that starts at step 0 at the earliest, never at negative steps.
void fit_step_axis(QCustomPlot* plot, const PlotCurve& curve);

/// Moves the plot's legend under its axes, `per_row` entries to a row, so it never covers a bar
/// (bar charts fill their frame; a legend inside would hide the tallest). From inside the axes or
/// from no layout (a legend taken out while empty). Idempotent.
void place_legend_below(QCustomPlot* plot, int per_row);

/// Redraws `plot` with one curve per session of `curve`.
void draw_compare_curve(QCustomPlot* plot, const PlotCurve& curve, const std::vector<SessionRef>& sessions,
                        const CurveStyle& style);
/// Grouped bars: per timer, one bar per session of its median milliseconds per step.
void draw_timer_breakdown(QCustomPlot* plot, const std::vector<sessions::SessionSummary>& summaries,
                          const std::vector<SessionRef>& sessions);

}  // namespace shardscope::gui
