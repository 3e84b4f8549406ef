// The live charts of the Launch & Watch page, at the size they get on a 1366x768 screen, in a wide
// window and at their minimum: the step-time breakdown's legend stays out of its data and is never
// cut off, its columns following the chart's width; the step axes' tick labels never run together
// and sit on integer steps (a resumed run too); memory is drawn in the unit its values need.

#include <set>

#include <QFontMetrics>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/launch/live_plots.hpp"
#include "tests/gui/common/chart_checks.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

namespace {

// The charts' share of the page in the default window on a 1366x768 screen (measured on the real
// window: 664 x 418) and in a wide window; QSize() for LivePlots' own minimum (the splitter over
// the logs dragged down, the window at its smallest).
const QSize kDefaultSize(664, 418), kWideSize(1500, 500), kMinimum;

/// `steps` steps of 2 ranks, each with the timers the engine reports under wall_clock_breakdown.
LiveUpdate run_of(int steps, int first = 1) {
  LiveUpdate update;
  for (int rank = 0; rank < 2; ++rank)
    for (int step = first; step < first + steps; ++step) {
      ss::StepMetrics m;
      m.rank = rank;
      m.step = step;
      m.loss = 6.0 / step;
      m.lr = 0.002;
      m.step_time_ms = 20.0 + rank;
      m.tokens_per_s = 4000.0;
      update.steps.push_back(m);
    }
  for (int step = first; step < first + steps; ++step)
    update.timers.push_back({0, step, {{"forward", 6.0}, {"backward", 9.0}, {"step", 3.0}}});
  return update;
}

}  // namespace

class LivePlotsTest : public QObject {
  Q_OBJECT

  /// The plots at `size`, shown and laid out, holding `steps` steps.
  static std::unique_ptr<LivePlots> shownAt(QSize size, int steps, int first = 1) {
    auto plots = std::make_unique<LivePlots>();
    plots->resize(size.isValid() ? size : plots->minimumSizeHint());
    plots->show();
    if (!QTest::qWaitForWindowExposed(plots.get())) return nullptr;
    plots->append(run_of(steps, first));
    if (!size.isValid()) plots->resize(plots->minimumSizeHint());  // the legend's rows count in the minimum
    QCoreApplication::processEvents();  // the layout's resizes
    for (const char* name : {"loss", "tokens_per_s", "breakdown"}) plots->chart(name)->replot();  // lays the elements out now
    return plots;
  }

 private slots:
  void breakdownLegendLeavesTheDataAlone() {
    for (const QSize size : {kDefaultSize, kWideSize, kMinimum}) {
      const auto plots = shownAt(size, 40);
      QVERIFY(plots);
      QCustomPlot* chart = plots->chart("breakdown");
      QCPLegend* legend = chart->legend;
      QVERIFY(legend->visible());
      QCOMPARE(legend->itemCount(), 4);  // forward, backward, step, other
      const QRect data = chart->axisRect()->rect();
      QVERIFY2(!legend->outerRect().intersects(data),
               qPrintable(QString("at %1x%2 the legend %3,%4 %5x%6 covers the axes %7,%8 %9x%10")
                              .arg(size.width()).arg(size.height())
                              .arg(legend->outerRect().x()).arg(legend->outerRect().y())
                              .arg(legend->outerRect().width()).arg(legend->outerRect().height())
                              .arg(data.x()).arg(data.y()).arg(data.width()).arg(data.height())));
      for (int i = 0; i < legend->itemCount(); ++i)  // every entry whole inside the chart
        if (QCPAbstractLegendItem* item = legend->item(i))
          QVERIFY2(chart->rect().contains(item->outerRect()), qPrintable(item->objectName()));
      // Under the axes the legend takes its own rows' height and no more; at the minimum size
      // it adds to the chart's height, so the bars keep what a chart of the row above has.
      const int beside = plots->chart("tokens_per_s")->axisRect()->rect().height();  // the same row
      QVERIFY2(data.height() + legend->outerRect().height() + 1 >= beside,
               qPrintable(QString("%1 px for the bars, %2 for tokens/s").arg(data.height()).arg(beside)));
      const int above = plots->chart("loss")->axisRect()->rect().height();
      if (!size.isValid())
        QVERIFY2(data.height() + 1 >= above, qPrintable(QString("%1 px for the bars, %2 for the loss").arg(data.height()).arg(above)));
    }
  }

  // Before the first step the legend has no entries and takes no room from the axes but its margins.
  void anEmptyBreakdownHasNoLegend() {
    {  // never shown a step: its axes as wide as the others'
      LivePlots fresh;
      fresh.resize(kDefaultSize);
      fresh.show();
      QVERIFY(QTest::qWaitForWindowExposed(&fresh));
      QCoreApplication::processEvents();
      for (const char* name : {"tokens_per_s", "breakdown"}) fresh.chart(name)->replot();
      const int breakdown = fresh.chart("breakdown")->axisRect()->rect().width();
      const int tokens = fresh.chart("tokens_per_s")->axisRect()->rect().width();
      QVERIFY2(breakdown * 10 >= tokens * 8, qPrintable(QString("%1 px against %2").arg(breakdown).arg(tokens)));
    }
    LivePlots plots;
    plots.resize(kDefaultSize);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.append(run_of(5));
    plots.clear();
    QCoreApplication::processEvents();
    for (const char* name : {"tokens_per_s", "breakdown"}) plots.chart(name)->replot();
    QCPLegend* legend = plots.chart("breakdown")->legend;
    QCOMPARE(legend->itemCount(), 0);
    QVERIFY2(legend->outerRect().height() <= legend->margins().top() + legend->margins().bottom(),
             qPrintable(QString::number(legend->outerRect().height())));
    // Nor from their width: an empty legend grid under the axes capped them at its margins' width.
    const int wide = plots.chart("tokens_per_s")->axisRect()->rect().width();
    QVERIFY2(plots.chart("breakdown")->axisRect()->rect().width() * 10 >= wide * 8,
             qPrintable(QString("the empty breakdown's axes are %1 px wide, tokens/s's %2")
                            .arg(plots.chart("breakdown")->axisRect()->rect().width()).arg(wide)));
    const int empty = plots.chart("breakdown")->axisRect()->rect().height();
    QVERIFY2(empty + legend->outerRect().height() >= plots.chart("tokens_per_s")->axisRect()->rect().height(),
             qPrintable(QString::number(empty)));
  }

  // At every width from the minimum to a wide window: where the four entries wrap to three a
  // row, the legend's last row has empty cells, which are no entries (fitting the legend to them
  // crashed the screenshots run).
  void everyWidthKeepsTheFourEntries() {
    LivePlots plots;
    const QSize minimum = plots.minimumSizeHint();
    plots.resize(minimum);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.append(run_of(12));
    QCustomPlot* chart = plots.chart("breakdown");
    std::set<int> wraps;
    for (int width = minimum.width(); width <= kWideSize.width(); width += 16) {
      plots.resize(width, kDefaultSize.height());
      QCoreApplication::processEvents();
      chart->replot();
      wraps.insert(chart->legend->wrap());
      QStringList names;
      for (int i = 0; i < chart->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart->legend->item(i))) names << item->plottable()->name();
      QVERIFY2(names.size() == 4, qPrintable(QString("at %1 px: %2").arg(width).arg(names.join(","))));
    }
    QVERIFY2(wraps.count(3) == 1, "no width wrapped the legend to three a row");
  }

  void legendColumnsFollowTheChartsWidth() {
    const auto wide = shownAt(kWideSize, 10);
    QVERIFY(wide);
    QCOMPARE(wide->chart("breakdown")->legend->wrap(), 4);  // one row
    const auto narrow = shownAt(kDefaultSize, 10);
    QVERIFY(narrow);
    const int per_row = narrow->chart("breakdown")->legend->wrap();
    QVERIFY2(per_row >= 1 && per_row < 4, qPrintable(QString::number(per_row)));
    narrow->resize(kWideSize);  // the window made wider: back to one row
    QTRY_COMPARE(narrow->chart("breakdown")->legend->wrap(), 4);
  }

  // 200 steps on ~110 px of axis: "50 100 150 200" ran together into "50100150200".
  void stepTickLabelsStayApart() {
    const auto plots = shownAt(kDefaultSize, 200);
    QVERIFY(plots);
    for (const char* name : {"loss", "breakdown"}) {
      QCPAxis* x = plots->chart(name)->xAxis;
      const QFontMetrics metrics(x->tickLabelFont());
      const QVector<double> ticks = x->tickVector();
      const QVector<QString> labels = x->tickVectorLabels();
      QVERIFY(ticks.size() >= 2);
      for (int i = 1; i < ticks.size(); ++i) {
        const double gap = x->coordToPixel(ticks[i]) - x->coordToPixel(ticks[i - 1]);
        const double needed = (metrics.horizontalAdvance(labels[i - 1]) + metrics.horizontalAdvance(labels[i])) / 2.0 + 6;
        QVERIFY2(gap >= needed, qPrintable(QString("%1: '%2' and '%3' are %4 px apart, need %5")
                                               .arg(name, labels[i - 1], labels[i]).arg(gap).arg(needed)));
      }
    }
  }

  // A run resumed at step 22: QCustomPlot's ticks at 22.5, 25, 27.5 ran together into "22.52527.530".
  // Every chart, every size, short and long runs: integer steps, labels apart and never repeated.
  void stepTicksAreIntegersAfterAResume() {
    for (const QSize size : {kDefaultSize, kWideSize, kMinimum})
      for (auto [first, steps] : {std::pair{22, 9}, std::pair{1, 3}, std::pair{1, 1}, std::pair{990, 40}, std::pair{1, 5000}}) {
        const auto plots = shownAt(size, steps, first);
        QVERIFY(plots);
        const QString problem = testing::chart_problems(plots.get());
        QVERIFY2(problem.isEmpty(), qPrintable(QString("%1x%2, steps %3..%4: %5").arg(size.width()).arg(size.height())
                                                   .arg(first).arg(first + steps - 1).arg(problem)));
      }
  }

  // A CPU run's ~3 MiB in GiB gave ticks like 0.00295: the unit follows the values, as the tables' does,
  // and the points drawn so far follow a change of unit.
  void memoryIsDrawnInTheUnitItsValuesNeed() {
    LivePlots plots;
    LiveUpdate update;
    for (int step = 1; step <= 4; ++step) {
      ss::StepMetrics m;
      m.step = step;
      m.mem_allocated_bytes = (3 << 20) + step * 1024;
      update.steps.push_back(m);
    }
    plots.append(update);
    QCustomPlot* memory = plots.chart("mem_allocated");
    QCOMPARE(memory->yAxis->label(), QString("memory (MiB)"));
    QVERIFY(memory->yAxis->range().contains(3.002));  // 3 MiB and a few KiB
    LiveUpdate large;
    ss::StepMetrics m;
    m.step = 5;
    m.mem_allocated_bytes = std::int64_t(2) << 30;
    large.steps.push_back(m);
    plots.append(large);
    QCOMPARE(memory->yAxis->label(), QString("memory (GiB)"));
    const auto first = memory->graph(0)->data()->constBegin();
    QVERIFY2(std::abs(first->value - 3.0 / 1024) < 1e-3, qPrintable(QString::number(first->value)));  // 3 MiB in GiB now
    QVERIFY(memory->yAxis->range().contains(2.0));
    plots.clear();
    QCOMPARE(memory->yAxis->label(), QString("memory (GiB)"));
  }

  // DeepSpeed's ThroughputTimer line gives CurrSamplesPerSec and no tokens: the throughput chart
  // draws samples/s under that label, and switches to tokens/s once a step brings them.
  void samplesPerSecondFillTheThroughputChart() {
    LivePlots plots;
    plots.setRunKind(LivePlots::RunKind::Watched);
    LiveUpdate update;
    for (int step = 2; step <= 6; step += 2) {
      ss::StepMetrics m;
      m.step = step;
      m.samples_per_s = 30.0 + step;
      update.steps.push_back(m);
    }
    plots.append(update);
    QCOMPARE(plots.throughputMetric(), std::string("samples_per_s"));
    QCOMPARE(plots.pointCount("tokens_per_s", 0), 3);
    QCOMPARE(plots.chart("tokens_per_s")->yAxis->label(), QString("samples/s"));
    QCOMPARE(plots.emptyNote("tokens_per_s"), QString());
    QVERIFY(plots.chart("tokens_per_s")->yAxis->range().contains(36.0));
    update.steps.front().tokens_per_s = 4096.0;
    plots.append(update);
    QCOMPARE(plots.throughputMetric(), std::string("tokens_per_s"));
    QCOMPARE(plots.chart("tokens_per_s")->yAxis->label(), QString("tokens/s"));
    QCOMPARE(plots.pointCount("tokens_per_s", 0), 1);  // samples/s and tokens/s never share an axis
    plots.clear();
    QCOMPARE(plots.pointCount("tokens_per_s", 0), 0);
  }

  // Dots mark the steps of a short curve (one TFLOP/s figure is a point, not a line) and go once
  // the curve is long, where they would blot out its shape (120 steps looked solid orange).
  void dotsOnlyWhileACurveIsShort() {
    LivePlots plots;
    plots.append(run_of(3));
    QCOMPARE(plots.chart("loss")->graph(0)->scatterStyle().shape(), QCPScatterStyle::ssDisc);
    plots.append(run_of(120));
    QCOMPARE(plots.pointCount("loss", 0), 120);
    QCOMPARE(plots.chart("loss")->graph(0)->scatterStyle().shape(), QCPScatterStyle::ssNone);
    QCOMPARE(plots.chart("loss")->graph(1)->scatterStyle().shape(), QCPScatterStyle::ssNone);
  }

  // A chart with no points, or only zeros (a CPU run's TFLOP/s), says why over a 0..1 axis
  // rather than QCustomPlot's band of 1e-12 around zero; the hint fits the kind of run.
  void anEmptyChartSaysWhy() {
    LivePlots plots;
    plots.setRunKind(LivePlots::RunKind::Watched);
    LiveUpdate update;
    for (int step = 1; step <= 4; ++step) {
      ss::StepMetrics m;
      m.step = step;
      m.loss = 2.0 / step;
      m.tflops = 0.0;
      update.steps.push_back(m);
    }
    plots.append(update);
    QVERIFY(plots.emptyNote("tflops").contains("flops_profiler"));
    QVERIFY(plots.emptyNote("tokens_per_s").contains("steps_per_print"));
    QCOMPARE(plots.emptyNote("loss"), QString());
    const QCPRange range = plots.chart("tflops")->yAxis->range();
    QCOMPARE(range.lower, 0.0);
    QCOMPARE(range.upper, 1.0);
    plots.setRunKind(LivePlots::RunKind::Engine);
    QVERIFY(!plots.emptyNote("tokens_per_s").contains("steps_per_print"));
    QVERIFY(!plots.emptyNote("tokens_per_s").isEmpty());
    update.steps.front().tflops = 12.5;
    plots.append(update);
    QCOMPARE(plots.emptyNote("tflops"), QString());
    QVERIFY(plots.chart("tflops")->yAxis->range().contains(12.5));
  }
};

QTEST_MAIN(LivePlotsTest)
#include "live_plots_test.moc"
