#pragma once
// The Tune page's scatter: throughput (y) against peak memory per rank (x) for every trial, the
// estimator's prediction beside each trial that ran (a hollow diamond joined to its measured
// point), trials without a throughput on the memory axis at their prediction (pruned grey x, out of
// memory red triangle, failed dark red, running green), the best trial starred, the usable memory
// the pruning judged against as a red dashed line, the legend under the axes. Memory is drawn in
// MiB or GiB (what its largest value needs), on a log axis when it spans more than 30x.

#include <vector>

#include <QPointF>
#include <QString>

#include "app/gui/tune/tune_results.hpp"

class QCustomPlot;
class QCPGraph;

namespace shardscope::gui {

/// The legend's names of the scatter's series.
inline const QString kScatterRan = QStringLiteral("ran: measured peak");
inline const QString kScatterPredicted = QStringLiteral("estimator's prediction");
inline const QString kScatterPruned = QStringLiteral("pruned (predicted, not run)");
inline const QString kScatterSkipped = QStringLiteral("skipped (slower by construction)");
inline const QString kScatterOom = QStringLiteral("out of memory");
inline const QString kScatterFailed = QStringLiteral("failed");
inline const QString kScatterRunning = QStringLiteral("running");
inline const QString kScatterBest = QStringLiteral("best");
inline const QString kScatterUsable = QStringLiteral("usable memory (budget less margin)");

/// Which table row each drawn point of each graph is (for clicks and tooltips).
struct ScatterIndex {
  std::vector<QCPGraph*> graphs;
  std::vector<std::vector<std::size_t>> rows;  ///< per graph, per data point: index into TuneView::rows
};

/// Sets the plot up once: axes titles, legend under the axes, zoom and drag.
void setup_tune_scatter(QCustomPlot* plot);
/// Draws `view` (replacing what was drawn) and replots.
ScatterIndex draw_tune_scatter(QCustomPlot* plot, const TuneView& view);
/// The graph of the legend name `name`, or null.
QCPGraph* scatter_graph(QCustomPlot* plot, const QString& name);
/// The table row of the point drawn nearest to pixel `pos`, within `radius` px; -1 for none.
int scatter_row_at(const QCustomPlot* plot, const ScatterIndex& index, const QPointF& pos, double radius = 8);

}  // namespace shardscope::gui
