// The Sessions & Compare page's curves (compare_charts): a metric a session recorded only as zeros
// or NaNs (an imported CPU DeepSpeed run's TFLOP/s) is drawn as an empty chart that says so, over
// a 0..1 axis, not a line on QCustomPlot's 1e-12 band; a real curve gets no such note.

#include <limits>

#include <QTest>
#include <qcustomplot.h>

#include "app/gui/compare_charts.hpp"
#include "app/gui/compare_data.hpp"

using namespace shardscope::gui;

namespace {

PlotCurve curve_of(const std::string& metric, std::vector<double> values) {
  Series series;
  for (std::size_t i = 0; i < values.size(); ++i) series.x.push_back(double(i + 1));
  series.y = std::move(values);
  return PlotCurve{metric, {series}, {Series{}}};
}

/// The text of the chart's note, "" when it has none.
QString note_of(QCustomPlot* plot) {
  for (int i = 0; i < plot->itemCount(); ++i)
    if (auto* text = qobject_cast<QCPItemText*>(plot->item(i))) return text->text();
  return {};
}

}  // namespace

class CompareChartsTest : public QObject {
  Q_OBJECT

 private slots:
  void zerosAndNaNsMakeAnEmptyChart() {
    const std::vector<SessionRef> sessions{{"a.ssdb", 1, "imported"}};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const auto& values : {std::vector<double>{0.0, 0.0, 0.0}, std::vector<double>{nan, 0.0, nan}}) {
      QCustomPlot plot;
      draw_compare_curve(&plot, curve_of("tflops", values), sessions, CurveStyle{});
      QCOMPARE(note_of(&plot), QString("not recorded in these sessions"));
      QCOMPARE(plot.yAxis->range().lower, 0.0);
      QCOMPARE(plot.yAxis->range().upper, 1.0);
    }
  }

  void aRealCurveHasNoNote() {
    QCustomPlot plot;
    draw_compare_curve(&plot, curve_of("samples_per_s", {31.5, 32.0, 0.0}), {{"a.ssdb", 1, "imported"}}, CurveStyle{});
    QCOMPARE(note_of(&plot), QString());
    QCOMPARE(plot.yAxis->label(), QString("samples/s"));
    QVERIFY(plot.yAxis->range().contains(32.0));
  }
};

QTEST_MAIN(CompareChartsTest)
#include "compare_charts_test.moc"
