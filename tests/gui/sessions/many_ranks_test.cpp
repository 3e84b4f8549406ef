// Many-rank sessions in the window (issue 35 item 4): a 12-rank session with rank 7 a straggler
// from step 4 draws bands on the Sessions page (hover names rank 7 as the slowest), a heat map whose
// row of rank 7 is the hottest, a rank filter that takes ranges and hosts and names a bad item,
// and the Launch & Watch charts in band mode.
#include <cmath>

#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "app/gui/common/rank_band_chart.hpp"
#include "app/gui/common/rank_heat_map.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

namespace {

constexpr int kRanks = 12;

ss::StepMetrics step_row(int rank, int step) {
  ss::StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1700000000 + step;
  m.step_time_ms = rank == 7 && step >= 4 ? 300.0 : 100.0 + rank;
  m.loss = 4.0 - 0.1 * step + 0.01 * rank;
  m.tokens_per_s = 1000.0;
  return m;
}

// Ranks on two hosts, node0 (0-5) and node1 (6-11); rank 7's step and forward timer are slow from step 4.
void write_session(const std::string& path) {
  ss::Store store = ss::Store::open_or_create(path);
  ss::StoreWriter writer(store);
  ss::RunStart start;
  start.name = "twelve";
  start.started_at = 1700000000;
  start.world_size = kRanks;
  start.config_json = "{}";
  for (int r = 0; r < kRanks; ++r) start.ranks.push_back({r, r % 6, r < 6 ? "node0" : "node1", 100 + r, "cpu"});
  std::vector<ss::Event> events{start};
  for (int step = 0; step < 10; ++step)
    for (int rank = 0; rank < kRanks; ++rank) {
      events.push_back(step_row(rank, step));
      events.push_back(ss::TimerBreakdown{rank, step, {{"forward", rank == 7 && step >= 4 ? 200.0 : 50.0}}});
    }
  writer.write("uid-twelve", events);
}

}  // namespace

class ManyRanksTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_;

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeManyRanksTest");
    QSettings().clear();
    file_ = dir_.filePath("twelve.db");
    write_session(file_.toStdString());
  }

  void sessionsPageDrawsBandsAndNamesTheSlowestRank() {
    SessionsPage page;
    page.resize(1400, 900);
    page.show();
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file_});
    QVERIFY(loaded.wait(10000));
    page.selectByName({"twelve"});
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    page.compareSelected();
    QVERIFY(drawn.wait(10000));
    const auto& bands = page.comparison().bands;
    QCOMPARE(bands.size(), std::size_t(1));
    QCOMPARE(bands[0].ranks, kRanks);
    QCustomPlot* steps = page.chart("step_time_ms");
    QVERIFY(steps);
    // The session's median curve (raw and smoothed) plus the band's min and max (filled down to min).
    QCOMPARE(steps->graphCount(), 4);
    QCOMPARE(steps->graph(3)->channelFillGraph(), steps->graph(2));
    const QString hover = BandHover::of(steps)->text(5);
    QVERIFY2(hover.contains("max 300 ms (node1:7, slowest)"), qPrintable(hover));
    QVERIFY2(hover.contains("median 105.5 ms"), qPrintable(hover));
    QVERIFY2(hover.contains("12 ranks"), qPrintable(hover));
    // The value axis reaches the band's top, not only the median.
    QVERIFY(steps->yAxis->range().upper >= 300);
  }

  void heatMapShowsTheStragglerAsTheHottestRow() {
    RankHeatMap map;
    map.resize(900, 500);
    map.show();
    QSignalSpy loaded(&map, &RankHeatMap::loaded);
    map.setSession(file_, 1);
    QVERIFY(loaded.wait(10000));
    const auto& grid = map.grid();
    QCOMPARE(int(grid.ranks.size()), kRanks);
    QCOMPARE(grid.columns, 10);
    QCOMPARE(map.seriesBox()->count(), 4);  // step time, loss, tokens/s, forward (timer)
    QCOMPARE(map.colorScale()->axis()->label(), QString("step time (ms)"));
    QCOMPARE(map.cellText(7, 6), QString("node1:7 \u00b7 step 6 \u00b7 step time: 300 ms"));
    QCOMPARE(map.colorMap()->data()->cell(6, 7), 300.0);
    // Hosts and ranges pick the rows; the series box picks the timer.
    map.setSeries("timer:forward");
    map.setRankFilter("node1,0-1");
    QVERIFY(loaded.wait(10000));
    QCOMPARE(map.grid().ranks, (std::vector<int>{0, 1, 6, 7, 8, 9, 10, 11}));
    QCOMPARE(map.colorScale()->axis()->label(), QString("forward (timer) (ms)"));
    QCOMPARE(map.cellText(3, 9), QString("node1:7 \u00b7 step 9 \u00b7 forward (timer): 200 ms"));
    // A bad item keeps the map and says what to write.
    map.setRankFilter("node7");
    QVERIFY(loaded.wait(10000));
    QVERIFY2(map.status()->text().contains("no host of that name in this session (its hosts are node0, node1)"),
             qPrintable(map.status()->text()));
    QCOMPARE(int(map.grid().ranks.size()), 8);
  }

  void livePlotsDrawBandsAboveEightRanks() {
    LivePlots plots;
    plots.resize(1200, 500);
    plots.show();
    plots.setWorldSize(kRanks);
    QVERIFY(plots.bandMode());
    LiveUpdate update;
    for (int step = 0; step < 10; ++step)
      for (int rank = 0; rank < kRanks; ++rank) update.steps.push_back(step_row(rank, step));
    plots.append(update);
    const auto band = plots.bandAt("loss", 3);
    QVERIFY(band.has_value());
    QCOMPARE(band->ranks, kRanks);
    QCOMPARE(band->max_rank, 11);
    QVERIFY(std::abs(band->median - (4.0 - 0.3 + 0.055)) < 1e-9);
    QCOMPARE(plots.chart("loss")->graphCount(), 3);  // min, max, median: not 12 curves
    QVERIFY(BandHover::of(plots.chart("loss"))->text(3).contains("max 3.81 (rank 11)"));
    plots.setWorldSize(4);
    QVERIFY(!plots.bandMode());
  }
};

QTEST_MAIN(ManyRanksTest)
#include "many_ranks_test.moc"
