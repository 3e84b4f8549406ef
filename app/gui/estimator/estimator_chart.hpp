#pragma once
// The Estimator page's chart: one stacked bar per plan (params, gradients, optimizer,
// activations, buffers per GPU, in the estimate's unit), the usable memory fit is judged against
// (red, dashed), the GPU's memory (grey, dotted), and the recommended and requested plans marked.

class QCustomPlot;

namespace shardscope::gui {

struct EstimatorView;

/// Redraws `plot` from `view` (clears it when the view has no rows).
void draw_estimator_chart(QCustomPlot* plot, const EstimatorView& view);

}  // namespace shardscope::gui
