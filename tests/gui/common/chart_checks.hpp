#pragma once
// What a reader of a chart trips on, as checks the GUI tests share: tick labels that repeat, run
// into each other, or (on a step axis) fall between integer steps; and labels or buttons whose
// text is cut. Each returns "" when all is well, else what is wrong, for QVERIFY2.

#include <QString>

class QCPAxis;
class QCustomPlot;
class QWidget;

namespace shardscope::gui::testing {

/// The axis's visible ticks (after a replot): labels distinct and apart (a digit's gap beside each
/// other on a horizontal axis, a line apart on a vertical one).
QString tick_label_problem(const QCPAxis* axis);
/// tick_label_problem, and every tick at an integer step.
QString step_tick_problem(const QCPAxis* axis);
/// Every chart under `root`: its x axis as a step axis (the charts whose x axis is "step"), its
/// y axis for distinct, apart labels.
QString chart_problems(const QWidget* root);
/// Visible single-line labels, buttons, check boxes and group box titles under `root` whose text
/// is wider than the room they got (wrapping labels and elided views excepted).
QString clipped_text(const QWidget* root);

}  // namespace shardscope::gui::testing
