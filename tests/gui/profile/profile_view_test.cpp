// The profile view as a tool: rows per rank (steps, timers' phases, a memory counter track, NVTX,
// GPU streams); the analyses as tables and charts equal to the profiler's; one selection (a kernel,
// a collective, a step, a time range) narrows every pane and equals the CLI twin's output; kernel
// names appear on boxes once zoomed in; a CPU session (timers and collectives, no GPU activity)
// still gives a timeline and charts.
#include <QSignalSpy>
#include <QTableView>
#include <QHeaderView>
#include <QTest>
#include <QWheelEvent>
#include <qcustomplot.h>

#include <nlohmann/json.hpp>

#include "app/gui/profile/profile_data.hpp"
#include "app/gui/profile/profile_timeline.hpp"
#include "app/gui/profile/profile_view.hpp"
#include "app/gui/common/rows_table_model.hpp"
#include "profiler/profile_analyses.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/gui/common/session_test_data.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;
namespace profiler = shardscope::profiler;

namespace {

double bar_value(QCustomPlot* plot, const QString& layer, double key) {
  for (int i = 0; i < plot->plottableCount(); ++i)
    if (auto* bars = qobject_cast<QCPBars*>(plot->plottable(i)); bars && bars->name() == layer)
      for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
        if (it->key == key) return it->value;
  return -1;
}

std::vector<std::string> words_after_shardscope(const QString& command) {
  // The twin is a shell line of plain words and '...' quoted ones (kernel names have none).
  std::vector<std::string> words;
  for (const QString& w : command.split(' ', Qt::SkipEmptyParts)) words.push_back(w.toStdString());
  words.erase(words.begin());
  return words;
}

}  // namespace

class ProfileViewTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_;
  testing::RunSpec gpu_{"gpu", 2, 20, 80, 6};
  testing::RunSpec cpu_{"cpu", 2, 12, 50, 7};

  void load(ProfileView& view, const std::string& name) {
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    QSignalSpy loaded(&view, &ProfileView::profileLoaded);
    view.load({file_.toStdString(), ss::find_session(store, name), name});
    QVERIFY(loaded.wait(10000));
    QVERIFY2(view.data()->error.empty(), view.data()->error.c_str());
  }

  static void select(ProfileView& view, const profiler::ProfileSelection& selection) {
    QSignalSpy analysed(&view, &ProfileView::selectionAnalysed);
    view.setSelection(selection);
    QVERIFY(analysed.wait(10000));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    file_ = dir_.filePath("profiles.db");
    gpu_.profiled = true;
    testing::write_sessions(file_, {gpu_, cpu_});
  }

  void rowsPerRankAsNsightStacksThem() {
    ProfileView view;
    load(view, "gpu");
    const auto data = view.data();
    // Per rank: steps, phases (timers), memory, NVTX 0 and 1, stream 7 (kernels, memcpy), stream 13 (NCCL).
    QCOMPARE(data->rows.size(), std::size_t(2 * 7));
    QCOMPARE(data->rows[0].label, std::string("rank 0 \u00b7 steps"));
    QCOMPARE(data->rows[0].items.size(), std::size_t(20));
    QCOMPARE(data->rows[1].kind, RowKind::kPhases);
    QCOMPARE(data->rows[1].items.size(), std::size_t(2 * 20));  // forward and backward of each step
    // Forward starts at the step's start: end of step less its step time.
    QCOMPARE(data->rows[1].items[0].start_ns, data->rows[0].items[0].start_ns);
    QCOMPARE(data->rows[1].items[0].end_ns - data->rows[1].items[0].start_ns, std::int64_t(0.3 * 80 * 1e6));
    QCOMPARE(data->rows[2].kind, RowKind::kMemory);
    QCOMPARE(data->rows[2].counter.size(), std::size_t(20));
    QCOMPARE(data->rows[2].counter_max, double(1ll << 30));  // rank 0 allocates 1 GiB
    QCOMPARE(data->rows[5].label, std::string("rank 0 \u00b7 GPU 0 \u00b7 stream 7"));
    QCOMPARE(data->rows[6].items[0].kind, TimelineKind::kCollective);
    // The first view is the profiled window, not the 20 s of steps.
    QCOMPARE(data->window_start_ns, testing::profiled_window_start_ns(gpu_) - 10'000);  // the HtoD copy
    QVERIFY(view.timeline()->viewEnd() - view.timeline()->viewStart() < 1e6);
  }

  void analysesAreTablesAndChartsEqualToTheProfilers() {
    ProfileView view;
    load(view, "gpu");
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    const auto ref = profiler::analyze_session(store, ss::find_session(store, "gpu"));
    QCOMPARE(view.kernelsModel()->rowCount(),
             static_cast<int>(ref.top_kernels[0].kernels.size() + ref.top_kernels[1].kernels.size()));
    QCOMPARE(view.kernelsModel()->index(0, 1).data().toString().toStdString(), ref.top_kernels[0].kernels[0].name);
    QCOMPARE(view.kernelsModel()->index(0, 3).data(RowsTableModel::kSortRole).toDouble(), 0.08);  // 2 x 40 us sgemm
    // Phases: one stacked bar per rank; forward is 30 % of the step, other the rest.
    QCustomPlot* phases = view.phaseChart();
    QCOMPARE(bar_value(phases, "forward", 1), *ref.phases.ranks[0].mean_ms[0]);
    QCOMPARE(bar_value(phases, "forward", 2), *ref.phases.ranks[1].mean_ms[0]);
    QCOMPARE(bar_value(phases, "other", 1), *ref.phases.ranks[0].mean_other_ms);
    QVERIFY(phases->legend->visible());
    // The legend sits under the axes: it never covers a bar (inside, it hid the tallest ones).
    phases->resize(220, 260);
    phases->replot();
    QVERIFY(!phases->legend->outerRect().intersects(phases->axisRect()->rect()));
    // Communication hidden vs exposed: the NCCL kernel's 60 us, 30 of them under the sgemm.
    QCOMPARE(bar_value(view.overlapChart(), "hidden behind compute", 1), *ref.comm_overlap[0].hidden_ms);
    QCOMPARE(bar_value(view.overlapChart(), "exposed (the step waited)", 1), *ref.comm_overlap[0].exposed_ms);
    QCOMPARE(view.stragglersModel()->rowCount(), static_cast<int>(ref.stragglers.steps.size()));
    QCOMPARE(view.idleModel()->rowCount(), 2);
    QVERIFY(view.analysesText().contains("== Slowest rank per step =="));
    // Top kernels sort by any column (numbers as numbers); a long name elides, so the numbers show.
    QTableView* table = view.kernelsView();
    QCOMPARE(table->horizontalHeader()->maximumSectionSize(), ProfileView::kNameColumnMaxWidth);
    QCOMPARE(table->model()->index(0, 1).data(Qt::ToolTipRole).toString(), table->model()->index(0, 1).data().toString());
    table->sortByColumn(3, Qt::AscendingOrder);
    QVERIFY(table->model()->index(0, 3).data(RowsTableModel::kSortRole).toDouble() <=
            table->model()->index(1, 3).data(RowsTableModel::kSortRole).toDouble());
  }

  void aKernelSelectionNarrowsEveryPaneAndIsTheCliTwin() {
    ProfileView view;
    load(view, "gpu");
    profiler::ProfileSelection kernel;
    kernel.kernel = "ampere_sgemm_128x64";
    select(view, kernel);
    const auto& shown = view.shown().analyses;
    QCOMPARE(shown.top_kernels.size(), std::size_t(2));
    QCOMPARE(shown.top_kernels[0].kernels.size(), std::size_t(1));
    QCOMPARE(view.kernelsModel()->rowCount(), 2);
    QCOMPARE(shown.stragglers.steps.size(), std::size_t(1));  // the kernel ran in step 5 only
    QCOMPARE(shown.stragglers.steps[0].step, std::int64_t(5));
    QCOMPARE(shown.comm_overlap[0].comm_kernels, std::int64_t(0));
    // The header's command prints the same selection's analyses.
    const QString command = view.cliCommand();
    QVERIFY2(command.contains("--select-kernel ampere_sgemm_128x64"), qPrintable(command));
    auto args = words_after_shardscope(command);
    args.push_back("--json");
    const auto result = shardscope::testing::run_cli(args);
    QVERIFY2(result.exit_code == 0, result.err.c_str());
    const auto json = nlohmann::json::parse(result.out).at("profile");
    QCOMPARE(json.at("top_kernels").size(), shown.top_kernels.size());
    QCOMPARE(json.at("top_kernels")[0].at("kernels")[0].at("total_ms").get<double>(), shown.top_kernels[0].kernels[0].total_ms);
    QCOMPARE(json.at("stragglers").at("steps").size(), shown.stragglers.steps.size());
  }

  void aTimeRangeFromShiftDragCutsTheKernels() {
    ProfileView view;
    load(view, "gpu");
    ProfileTimeline* timeline = view.timeline();
    timeline->resize(1200, timeline->minimumHeight());
    const std::int64_t t0 = testing::profiled_window_start_ns(gpu_);
    timeline->setViewRange(double(t0 - 20'000), double(t0 + 180'000));
    // Shift+drag over the first sgemm's second half and the gap after it: [t0 + 20 us, t0 + 45 us].
    const int y = timeline->rowTop(5) + 5;
    QSignalSpy analysed(&view, &ProfileView::selectionAnalysed);
    QTest::mousePress(timeline, Qt::LeftButton, Qt::ShiftModifier, {int(timeline->xOf(double(t0 + 20'000))), y});
    QTest::mouseMove(timeline, {int(timeline->xOf(double(t0 + 45'000))), y});
    QTest::mouseRelease(timeline, Qt::LeftButton, Qt::ShiftModifier, {int(timeline->xOf(double(t0 + 45'000))), y});
    QVERIFY(analysed.wait(10000));
    const auto& range = view.selection().time_range_ns;
    QVERIFY(range.has_value());
    QVERIFY(std::abs(double(range->first - (t0 + 20'000))) < 1000);
    // Only the part of rank 0's sgemm inside the range counts: about 20 of its 40 us.
    const auto& top = view.shown().analyses.top_kernels.at(0);
    QCOMPARE(top.kernels.size(), std::size_t(1));
    QVERIFY(std::abs(top.kernels[0].total_ms - double(t0 + 40'000 - range->first) / 1e6) < 1e-9);
    QVERIFY(view.cliCommand().contains("--select-time"));
  }

  void aClickedStepOrCollectiveSelects() {
    ProfileView view;
    load(view, "gpu");
    ProfileTimeline* timeline = view.timeline();
    timeline->resize(1200, timeline->minimumHeight());
    timeline->setViewRange(double(gpu_.started_at + 2) * 1e9, double(gpu_.started_at + 4) * 1e9);
    QSignalSpy analysed(&view, &ProfileView::selectionAnalysed);
    // Step 3 of rank 0 ends at started_at + 3 s.
    QTest::mouseClick(timeline, Qt::LeftButton, {}, {int(timeline->xOf((gpu_.started_at + 3) * 1e9 - 20e6)), timeline->rowTop(0) + 8});
    QVERIFY(analysed.wait(10000));
    QCOMPARE(view.selection().step, std::optional<std::int64_t>(3));
    QCOMPARE(view.stragglersModel()->rowCount(), 1);
    QCOMPARE(view.shown().collectives.at(0).count, std::int64_t(2));  // one all_reduce per rank in step 3
    profiler::ProfileSelection collective;
    collective.collective = "all_reduce";
    select(view, collective);
    QCOMPARE(view.shown().collectives.size(), std::size_t(1));
    QCOMPARE(view.shown().collectives[0].count, std::int64_t(2 * 20));
    // The NCCL kernel is the all_reduce: only it is left in the kernel tables.
    QCOMPARE(view.shown().analyses.top_kernels.at(0).kernels.at(0).name, std::string("ncclDevKernel_AllReduce_Sum_f32"));
  }

  void kernelNamesAppearWhenZoomedIn() {
    QCOMPARE(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                               "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"),
             std::string("vectorized_elementwise_kernel"));
    QCOMPARE(short_kernel_name("ampere_sgemm_128x64"), std::string("ampere_sgemm_128x64"));
    ProfileView view;
    load(view, "gpu");
    ProfileTimeline* timeline = view.timeline();
    timeline->resize(1200, timeline->minimumHeight());
    const std::int64_t t0 = testing::profiled_window_start_ns(gpu_);
    timeline->setViewRange(double(gpu_.started_at) * 1e9, double(gpu_.started_at + 21) * 1e9);
    QVERIFY(!timeline->grab().isNull());
    const std::size_t far = timeline->lastPaintedLabels();
    timeline->setViewRange(double(t0), double(t0 + 200'000));
    QVERIFY(!timeline->grab().isNull());
    QVERIFY2(timeline->lastPaintedLabels() > far + 4, qPrintable(QString("%1 labels").arg(timeline->lastPaintedLabels())));
    // Hover, wheel zoom about the cursor and drag still work.
    const int x = static_cast<int>(timeline->xOf(double(t0 + 20'000))), y = timeline->rowTop(5) + 8;
    auto hit = timeline->itemAt({x, y});
    QVERIFY(hit);
    QVERIFY(timeline->describe(*hit->second).contains("ampere_sgemm_128x64"));
    QVERIFY(timeline->describe(*hit->second).contains("40.0 us"));
    const double anchor = timeline->timeAt(x);
    QWheelEvent wheel(QPointF(x, y), timeline->mapToGlobal(QPointF(x, y)), {}, {0, 240}, Qt::NoButton, {},
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline, &wheel);
    QVERIFY(std::fabs((timeline->viewEnd() - timeline->viewStart()) - 200'000 / 1.5625) < 1);
    QVERIFY(std::fabs(timeline->timeAt(x) - anchor) < 1);
    const double before = timeline->viewStart();
    QTest::mousePress(timeline, Qt::LeftButton, {}, {x, y});
    QTest::mouseMove(timeline, {x - 100, y});
    QTest::mouseRelease(timeline, Qt::LeftButton, {}, {x - 100, y});
    QVERIFY(timeline->viewStart() > before);
  }

  void durationsReadAsTheRulerShowsThem() {
    QCOMPARE(format_duration_ns(-0.0), std::string("0 ns"));  // the ruler's first tick was "-0 ns"
    QCOMPARE(format_duration_ns(-1e-7), std::string("0 ns"));
    QCOMPARE(format_duration_ns(1500), std::string("1.5 us"));
    QCOMPARE(format_duration_ns(2.5e6), std::string("2.500 ms"));
    QCOMPARE(format_duration_ns(-3e9), std::string("-3.000 s"));
  }

  void aCpuSessionHasATimelineAndCharts() {
    ProfileView view;
    load(view, "cpu");
    const auto data = view.data();
    QVERIFY(!data->analyses.has_profiled_window);
    QCOMPARE(data->rows.size(), std::size_t(2 * 3));  // steps, phases, memory per rank
    QCOMPARE(data->window_start_ns, data->start_ns);    // no GPU window: the whole run
    QCOMPARE(bar_value(view.phaseChart(), "backward", 2), 0.6 * 50);
    // No NCCL kernels: hidden vs exposed from the timers and collective records.
    QCOMPARE(view.shown().analyses.comm_overlap[0].method, profiler::OverlapMethod::kTimers);
    QCOMPARE(view.collectivesModel()->rowCount(), 1);
    QVERIFY(!view.timeline()->grab().isNull());
    QVERIFY(view.timeline()->lastPaintedBoxes() > 0);
  }
};

QTEST_MAIN(ProfileViewTest)
#include "profile_view_test.moc"
