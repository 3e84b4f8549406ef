#pragma once
// The Estimator page's chart: one stacked bar per plan (params, gradients, optimizer,
// activations, buffers per GPU, in GiB) and the GPU's memory as a horizontal line.

class QCustomPlot;

namespace shardscope::gui {

struct EstimatorView;

/// Redraws `plot` from `view` (clears it when the view has no rows).
void draw_estimator_chart(QCustomPlot* plot, const EstimatorView& view);

}  // namespace shardscope::gui
