// The Sessions & Compare page's curves (compare_charts): a metric a session recorded only as zeros
// or NaNs (an imported CPU DeepSpeed run's TFLOP/s) is drawn as an empty chart that says so, over
// a 0..1 axis, not a line on QCustomPlot's 1e-12 band; a real curve gets no such note. A single
// point is a dot over steps that start at 0 at the earliest; log axes never repeat a label;
// step axes tick integers only, apart even after a resume; memory is drawn in the unit its
// values need; an exported chart's legend is under the axes, not over the curves.

#include <limits>
#include <memory>

#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/sessions/compare_data.hpp"
#include "app/gui/common/gui_export.hpp"
#include "tests/gui/common/chart_checks.hpp"

using namespace shardscope::gui;

namespace {

PlotCurve curve_of(const std::string& metric, std::vector<double> values, double first_step = 1) {
  Series series;
  for (std::size_t i = 0; i < values.size(); ++i) series.x.push_back(first_step + double(i));
  series.y = std::move(values);
  return PlotCurve{metric, {series}, {Series{}}};
}

/// A chart the size the Compare page's grid gives one at 1366x768 (four to a row), drawn.
std::unique_ptr<QCustomPlot> drawn(const PlotCurve& curve, bool log_scale = false, QSize size = {250, 170}) {
  auto plot = std::make_unique<QCustomPlot>();
  use_step_ticks(plot->xAxis, 5);
  plot->resize(size);
  plot->show();  // a hidden widget gets its size (and QCustomPlot its viewport) only when shown
  if (!QTest::qWaitForWindowExposed(plot.get())) return nullptr;
  CurveStyle style;
  style.log_scale = log_scale;
  draw_compare_curve(plot.get(), curve, {{"a.ssdb", 1, "run a"}}, style);
  plot->replot();
  return plot;
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

  // A DeepSpeed run's one TFLOP/s figure (at profile_step) was no line and so invisible, and the
  // axis around its one step ran to negative steps.
  void aSinglePointIsADotOverNonNegativeSteps() {
    for (double step : {0.0, 1.0, 10.0}) {
      const auto plot = drawn(curve_of("tflops", {87.5}, step));
      QVERIFY(plot);
      QCOMPARE(plot->graphCount(), 1);
      QCOMPARE(plot->graph(0)->scatterStyle().shape(), QCPScatterStyle::ssDisc);
      QVERIFY(plot->xAxis->range().contains(step));
      QVERIFY2(plot->xAxis->range().lower >= -0.5, qPrintable(QString::number(plot->xAxis->range().lower)));
      for (double tick : plot->xAxis->tickVector())
        if (plot->xAxis->range().contains(tick)) QVERIFY2(tick >= 0, qPrintable(QString("a tick at step %1").arg(tick)));
      QVERIFY(plot->yAxis->range().contains(87.5));
    }
  }

  // An lr from 1e-3 to 1.5e-2 spans less than 1.6 decades: QCustomPlot's log ticker falls back to
  // linear ticks there, and the power-of-ten format printed 0.01 and 0.0125 both as "1·10⁻²".
  void logAxesNeverRepeatALabel() {
    std::vector<double> lr;
    for (int i = 0; i <= 40; ++i) lr.push_back(1e-3 + 14e-3 * i / 40.0);
    for (const std::vector<double>& values : {lr, std::vector<double>{1e-3, 2.5e-3}, std::vector<double>{1e-5, 2e-3},
                                              std::vector<double>{5.9, 6.1}})
      for (QSize size : {QSize(250, 170), QSize(400, 300), QSize(250, 120)}) {
        const auto plot = drawn(curve_of("lr", values), true, size);
        QVERIFY(plot);
        QVERIFY(plot->yAxis->tickVector().size() >= 1);
        const QString problem = testing::tick_label_problem(plot->yAxis);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
      }
  }

  // An empty chart on a log axis drew QCustomPlot's default range: "5 4 3 2 1" crammed at its top.
  void anEmptyLogChartIsAPlainZeroToOne() {
    const auto plot = drawn(curve_of("loss_scale", {}), true);
    QVERIFY(plot);
    QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLinear);
    QCOMPARE(plot->yAxis->range().lower, 0.0);
    QCOMPARE(plot->yAxis->range().upper, 1.0);
    QCOMPARE(note_of(plot.get()), QString("not recorded in these sessions"));
  }

  // Steps 22 to 30 after a resume: QCustomPlot ticked 22.5 25 27.5 30 and printed "22.52527.530".
  void stepTicksAreIntegersAndApart() {
    for (int first : {1, 22, 995})
      for (int count : {3, 9, 40, 200})
        for (QSize size : {QSize(140, 110), QSize(250, 170), QSize(600, 300)}) {
          std::vector<double> loss(static_cast<std::size_t>(count), 2.0);
          const auto plot = drawn(curve_of("loss", loss, first), false, size);
          QVERIFY(plot);
          QVERIFY(plot->xAxis->tickVector().size() >= 1);
          const QString problem = testing::step_tick_problem(plot->xAxis);
          QVERIFY2(problem.isEmpty(), qPrintable(QString("steps %1..%2 at %3 px: %4").arg(first).arg(first + count - 1)
                                                     .arg(size.width()).arg(problem)));
        }
  }

  // A CPU run's peak memory is ~3 MiB: in GiB its ticks read 0.00295.
  void memoryIsDrawnInTheUnitItsValuesNeed() {
    const double mib = 1 << 20;
    const auto small = drawn(curve_of("mem_peak", {2.9 * mib, 3.1 * mib, 3.0 * mib}));
    QVERIFY(small);
    QCOMPARE(small->yAxis->label(), QString("memory peak (MiB)"));
    QVERIFY(small->yAxis->range().contains(3.0));
    const auto large = drawn(curve_of("mem_peak", {70.0 * 1024 * mib, 71.5 * 1024 * mib}));
    QVERIFY(large);
    QCOMPARE(large->yAxis->label(), QString("memory peak (GiB)"));
    QVERIFY(large->yAxis->range().contains(71.5));
    QCOMPARE(byte_unit_for(1023).name, QString("B"));
    QCOMPARE(byte_unit_for(1024).name, QString("KiB"));
    QCOMPARE(byte_unit_for(mib).name, QString("MiB"));
  }

  // The on-screen legend is off (the page's header names the colours); an exported PNG shows it,
  // and it was drawn inside the axes, over the curves.
  void anExportedLegendIsUnderTheCurves() {
    QCustomPlot plot;
    plot.resize(320, 220);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    PlotCurve curve = curve_of("loss", {3, 2.5, 2, 1.8, 1.7});
    curve.raw.push_back(curve.raw.front());
    curve.smoothed.push_back(Series{});
    draw_compare_curve(&plot, curve, {{"a.ssdb", 1, "zero-1 lr 2e-3"}, {"a.ssdb", 2, "zero-2 lr 6e-4"}}, CurveStyle{});
    QVERIFY(!plot.legend->visible());
    {
      const LegendForExport exporting(&plot);
      plot.replot();
      QVERIFY(plot.legend->visible());
      QCOMPARE(plot.legend->itemCount(), 2);
      QVERIFY2(!plot.legend->outerRect().intersects(plot.axisRect()->rect()), "the legend covers the curves");
      const QRect legend = plot.legend->outerRect();
      QVERIFY2(plot.rect().contains(legend), qPrintable(QString("legend %1,%2 %3x%4 in %5x%6, wrap %7").arg(legend.x()).arg(legend.y())
                                                          .arg(legend.width()).arg(legend.height()).arg(plot.width()).arg(plot.height()).arg(plot.legend->wrap())));
    }
    QVERIFY(!plot.legend->visible());  // as it was on screen, inside the axes again
    QCOMPARE(plot.legend->layout(), static_cast<QCPLayout*>(plot.axisRect()->insetLayout()));
    QCOMPARE(plot.plotLayout()->elementCount(), 1);  // the axes alone, no empty legend row left
    QTemporaryDir dir;
    QVERIFY(save_plot_png(&plot, dir.filePath("loss.png")));
    QCOMPARE(QImage(dir.filePath("loss.png")).size(), QSize(640, 440));
  }
};

QTEST_MAIN(CompareChartsTest)
#include "compare_charts_test.moc"
