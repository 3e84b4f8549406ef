// The window at 1,024 ranks (issue 35 item 4), timed with QBENCHMARK on a session made by
// shardscope-load (scripts/bench_gui_scale.sh): opening it on the Sessions page to drawn curves
// with their bands (budget 3 s), the heat map's read and draw, and one frame of pan and of zoom on
// a band chart and on the heat map (budget 100 ms a frame). SHARDSCOPE_BENCH_SESSION names the
// file; without it every case is skipped with that reason.
#include <QElapsedTimer>
#include <QSettings>
#include <QSignalSpy>
#include <QtTest>
#include <qcustomplot.h>

#include "app/gui/common/rank_heat_map.hpp"
#include "diagnosis/stored_session.hpp"
#include "sessions/rank_bands.hpp"
#include "sessions/session_summary.hpp"
#include "app/gui/sessions/sessions_page.hpp"

using namespace shardscope::gui;

namespace {

constexpr double kOpenBudgetMs = 3000;
constexpr double kFrameBudgetMs = 100;

QString bench_session() { return qEnvironmentVariable("SHARDSCOPE_BENCH_SESSION"); }

// One frame as the user makes it: the range moves, then the chart is drawn now, not queued.
double frame_ms(QCustomPlot* plot, const std::function<void()>& move) {
  QElapsedTimer clock;
  clock.start();
  move();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  return double(clock.nsecsElapsed()) / 1e6;
}

}  // namespace

class ManyRanksBench : public QObject {
  Q_OBJECT

  std::unique_ptr<SessionsPage> page_;

  void requireSession() {
    if (bench_session().isEmpty())
      QSKIP("SHARDSCOPE_BENCH_SESSION is not set: run scripts/bench_gui_scale.sh, which makes a 1,024-rank session");
  }

  void checkFrames(QCustomPlot* plot, const char* what) {
    double worst = 0;
    QBENCHMARK {
      worst = std::max(worst, frame_ms(plot, [plot] { plot->xAxis->scaleRange(0.8, plot->xAxis->range().center()); }));
      worst = std::max(worst, frame_ms(plot, [plot] { plot->xAxis->moveRange(plot->xAxis->range().size() * 0.1); }));
      worst = std::max(worst, frame_ms(plot, [plot] { plot->xAxis->scaleRange(1.25, plot->xAxis->range().center()); }));
      worst = std::max(worst, frame_ms(plot, [plot] { plot->xAxis->moveRange(-plot->xAxis->range().size() * 0.1); }));
    }
    qInfo("%s: slowest pan or zoom frame %.1f ms (budget %.0f ms)", what, worst, kFrameBudgetMs);
    QVERIFY2(worst <= kFrameBudgetMs, qPrintable(QString("%1: a frame took %2 ms").arg(what).arg(worst)));
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeManyRanksBench");
    QSettings().clear();
  }

  // Where the opening's time goes: the catalog (with its quick_check) and the comparison's reads.
  void openParts() {
    requireSession();
    QElapsedTimer clock;
    clock.start();
    const Catalog catalog = load_catalog({bench_session().toStdString()});
    const double catalog_ms = double(clock.nsecsElapsed()) / 1e6;
    QVERIFY(!catalog.rows.empty());
    clock.restart();
    // The session openToFirstPage opens (by its name), else the newest.
    std::int64_t id = catalog.rows.front().info.id;
    for (const auto& row : catalog.rows)
      if (row.info.name == "shardscope-load") id = row.info.id;
    const SessionRef ref{bench_session().toStdString(), id, "load"};
    const Comparison comparison = compare_refs({ref});
    const double compare_ms = double(clock.nsecsElapsed()) / 1e6;
    qInfo("catalog %.0f ms, comparison (summary, curves, bands, findings) %.0f ms", catalog_ms, compare_ms);
    namespace ss = shardscope::sessions;
    ss::StoreOpenOptions options;
    options.read_only = true;
    ss::Store store = ss::Store::open(ref.file, options);
    const auto time = [&clock](const char* what, const std::function<void()>& read) {
      clock.restart();
      read();
      qInfo("  %s: %.0f ms", what, double(clock.nsecsElapsed()) / 1e6);
    };
    time("summarize_session", [&] { ss::summarize_session(store, ref.id, {}); });
    time("load_curve x 9", [&] { for (auto m : compared_metrics()) ss::load_curve(store, ref.id, m); });
    time("load_timer_curve (each timer)", [&] { for (auto& t : ss::load_timer_names(store, ref.id)) ss::load_timer_curve(store, ref.id, t); });
    time("load_step_bands (step_stats, the rows of the steps whose ranks differ)",
         [&] { ss::load_step_bands(store, ref.id, compared_metrics()); });
    ss::StepBandOptions one_reader;
    one_reader.rows_per_reader = std::size_t(1) << 40;
    time("load_step_bands (the same on one connection)", [&] { ss::load_step_bands(store, ref.id, compared_metrics(), one_reader); });
    ss::StepBandOptions every_row;
    every_row.source = ss::BandSource::kRows;
    time("load_step_bands (every row: what it read before)", [&] { ss::load_step_bands(store, ref.id, compared_metrics(), every_row); });
    time("load_rank_ids and load_session (the bands' ranks and hosts)", [&] {
      ss::load_rank_ids(store, ref.id);
      ss::load_session(store, ref.id);
    });
    time("review_stored_session (findings)", [&] { shardscope::diagnosis::review_stored_session(store, ref.id, ss::load_session(store, ref.id)); });
  }

  // From openFiles to the curves drawn: the catalog, the comparison (summary, curves, bands) and the draw.
  void openToFirstPage() {
    requireSession();
    double ms = 0, catalog_ms = 0, compared_ms = 0;
    QBENCHMARK_ONCE {
      page_ = std::make_unique<SessionsPage>();
      page_->resize(1600, 1000);
      page_->show();
      QElapsedTimer clock;
      clock.start();
      QSignalSpy loaded(page_.get(), &SessionsPage::catalogLoaded);
      page_->openFiles({bench_session()});
      QVERIFY(loaded.wait(60000));
      catalog_ms = double(clock.nsecsElapsed()) / 1e6;
      page_->selectByName({"shardscope-load"});
      QSignalSpy drawn(page_.get(), &SessionsPage::curvesDrawn);
      const auto ready = connect(page_.get(), &SessionsPage::comparisonReady,
                                 [&] { compared_ms = double(clock.nsecsElapsed()) / 1e6; });
      page_->compareSelected();
      QVERIFY(drawn.wait(60000));
      disconnect(ready);
      page_->chart("step_time_ms")->replot(QCustomPlot::rpImmediateRefresh);
      ms = double(clock.nsecsElapsed()) / 1e6;
    }
    qInfo("  catalog listed at %.0f ms, comparison read at %.0f ms, curves and bands drawn at %.0f ms", catalog_ms,
          compared_ms, ms);
    QVERIFY(!page_->comparison().bands.empty());
    const int ranks = page_->comparison().bands.front().ranks;
    qInfo("open %d-rank session to drawn curves with bands: %.0f ms (budget %.0f ms)", ranks, ms, kOpenBudgetMs);
    QVERIFY2(ms <= kOpenBudgetMs, qPrintable(QString("opening took %1 ms").arg(ms)));
  }

  void bandChartPanAndZoom() {
    requireSession();
    QVERIFY(page_);
    checkFrames(page_->chart("step_time_ms"), "band chart (step time)");
  }

  void heatMapOpen() {
    requireSession();
    QVERIFY(page_);
    RankHeatMap* map = page_->heatMap();
    double ms = 0;
    QBENCHMARK_ONCE {
      QElapsedTimer clock;
      clock.start();
      QSignalSpy loaded(map, &RankHeatMap::loaded);
      map->setSession(bench_session(), page_->comparison().sessions.front().id);
      QVERIFY(loaded.wait(60000));
      map->plot()->replot(QCustomPlot::rpImmediateRefresh);
      ms = double(clock.nsecsElapsed()) / 1e6;
    }
    qInfo("heat map of %zu ranks x %d columns read and drawn: %.0f ms", map->grid().ranks.size(), map->grid().columns, ms);
    QVERIFY2(ms <= kOpenBudgetMs, qPrintable(QString("the heat map took %1 ms").arg(ms)));
  }

  void heatMapPanAndZoom() {
    requireSession();
    QVERIFY(page_);
    RankHeatMap* map = page_->heatMap();
    map->resize(1400, 900);
    map->show();
    checkFrames(map->plot(), "heat map");
  }

  void cleanupTestCase() { page_.reset(); }
};

QTEST_MAIN(ManyRanksBench)
#include "many_ranks_bench.moc"
