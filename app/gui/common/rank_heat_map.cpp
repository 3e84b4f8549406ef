#include "app/gui/common/rank_heat_map.hpp"

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"
#include "sessions/rank_selection.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

// Row ticks at integer rows, labelled with the rank the row holds (a filter's rows are not ranks).
class RankRowTicker : public QCPAxisTicker {
 public:
  explicit RankRowTicker(QCPAxis* axis) : axis_(axis) {}
  std::vector<int> ranks;

 protected:
  double getTickStep(const QCPRange& range) override {
    return StepTicker::integer_step(range.size(), ticks_that_fit(axis_, "0000", 2, 8));
  }
  int getSubTickCount(double) override { return 0; }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    const auto row = static_cast<long long>(std::llround(tick));
    if (row < 0 || row >= static_cast<long long>(ranks.size()) || std::abs(tick - double(row)) > 1e-6) return {};
    return QString::number(ranks[static_cast<std::size_t>(row)]);
  }

 private:
  QCPAxis* axis_;
};

QString scale_title(const ss::RankStepGrid& grid) {
  QString title = QString::fromStdString(grid.series.title);
  if (!grid.series.unit.empty()) title += QString(" (%1)").arg(QString::fromStdString(grid.series.unit));
  if (grid.steps_per_column > 1) title += QObject::tr(", mean of %1 steps").arg(grid.steps_per_column);
  return title;
}

}  // namespace

HeatMapData load_heat_map(const std::string& file, std::int64_t session_id, const std::string& key,
                          const std::string& filter, int max_columns) {
  HeatMapData out;
  try {
    ss::StoreOpenOptions options;
    options.read_only = true;
    options.integrity = ss::IntegrityCheck::kSkip;  // the catalog checked the file; a live view re-reads it
    ss::Store store = ss::Store::open(file, options);
    out.series = ss::list_rank_step_series(store, session_id);
    if (out.series.empty()) return out;
    for (const auto& r : ss::load_session(store, session_id).ranks) out.ranks.push_back(r.info);
    const bool known = std::any_of(out.series.begin(), out.series.end(), [&](const auto& s) { return s.key == key; });
    const std::vector<int> ranks = filter.empty() ? std::vector<int>{} : ss::parse_rank_selection(filter, out.ranks);
    out.grid = ss::load_rank_step_grid(store, session_id, known ? key : out.series.front().key, ranks, max_columns);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

RankHeatMap::RankHeatMap(QWidget* parent) : QWidget(parent) {
  series_ = new QComboBox;
  series_->setToolTip(tr("The per-rank series drawn: step time, each phase timer, the wait in each collective op"));
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("all ranks (e.g. 0-63, 0-7,12, node3)"));
  filter_->setToolTip(tr("Ranks shown as rows: ranks, ranges and host names, separated by commas"));
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Series")));
  bar->addWidget(series_, 1);
  bar->addWidget(new QLabel(tr("Ranks")));
  bar->addWidget(filter_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(status_);
  buildPlot();
  layout->addWidget(plot_, 1);
  watcher_ = new QFutureWatcher<HeatMapData>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, &RankHeatMap::onLoaded);
  connect(series_, &QComboBox::activated, this, [this] { reload(); });
  connect(filter_, &QLineEdit::editingFinished, this, [this] { reload(); });
}

RankHeatMap::~RankHeatMap() { watcher_->waitForFinished(); }

void RankHeatMap::buildPlot() {
  plot_ = new QCustomPlot;
  plot_->setMinimumSize(300, 200);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->xAxis->setLabel(tr("step"));
  use_step_ticks(plot_->xAxis, 8);
  plot_->yAxis->setLabel(tr("rank"));
  plot_->yAxis->setRangeReversed(true);  // rank 0 at the top, as a list of ranks reads
  plot_->yAxis->setTicker(QSharedPointer<RankRowTicker>::create(plot_->yAxis));
  map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  scale_ = new QCPColorScale(plot_);
  plot_->plotLayout()->addElement(0, 1, scale_);
  scale_->setType(QCPAxis::atRight);
  map_->setColorScale(scale_);
  QCPColorGradient gradient(QCPColorGradient::gpThermal);
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  map_->setGradient(gradient);
  map_->setInterpolate(false);  // one cell, one rank: no blur between a straggler and its neighbours
  auto* group = new QCPMarginGroup(plot_);  // the scale's height follows the axes'
  plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this, &RankHeatMap::onMouseMove);
}

void RankHeatMap::setSession(const QString& file, std::int64_t session_id) {
  file_ = file.toStdString();
  session_id_ = session_id;
  reload();
}

void RankHeatMap::setSeries(const QString& key) {
  if (series_->findData(key) < 0) series_->addItem(key, key);  // before the first read: until the series are known
  series_->setCurrentIndex(series_->findData(key));
  reload();
}

void RankHeatMap::setRankFilter(const QString& text) {
  filter_->setText(text);
  reload();
}

bool RankHeatMap::isLoading() const { return watcher_->isRunning(); }

void RankHeatMap::reload() {
  if (file_.empty() || session_id_ == 0) return;
  if (watcher_->isRunning()) {  // one read at a time; the last request wins
    reload_pending_ = true;
    return;
  }
  const auto file = file_;
  const auto id = session_id_;
  const auto key = series_->currentData().toString().toStdString();
  const auto filter = filter_->text().toStdString();
  status_->setText(tr("Reading\u2026"));
  watcher_->setFuture(QtConcurrent::run([=] { return load_heat_map(file, id, key, filter, kColumns); }));
}

void RankHeatMap::onLoaded() {
  HeatMapData data = watcher_->result();
  if (reload_pending_) {  // asked for something else meanwhile: this read is stale
    reload_pending_ = false;
    return reload();
  }
  if (!data.error.empty()) {  // a bad filter: keep the last grid, say what to type
    status_->setText(QString("<span style='color:#a00'>%1</span>").arg(QString::fromStdString(data.error).toHtmlEscaped()));
    return emit loaded();
  }
  data_ = std::move(data);
  fillSeries();
  draw();
  emit loaded();
}

void RankHeatMap::fillSeries() {
  const QSignalBlocker block(series_);
  const QString current = QString::fromStdString(data_.grid.series.key);
  series_->clear();
  for (const auto& s : data_.series) {
    QString text = QString::fromStdString(s.title);
    if (!s.unit.empty()) text += QString(" (%1)").arg(QString::fromStdString(s.unit));
    series_->addItem(text, QString::fromStdString(s.key));
  }
  series_->setCurrentIndex(std::max(0, series_->findData(current)));
}

void RankHeatMap::draw() {
  const auto& g = data_.grid;
  const int rows = static_cast<int>(g.ranks.size());
  static_cast<RankRowTicker*>(plot_->yAxis->ticker().data())->ranks = g.ranks;
  const double half = (double(g.steps_per_column) - 1) / 2;
  const double first = double(g.first_step) + half, last = first + double(std::max(0, g.columns - 1) * g.steps_per_column);
  map_->data()->setSize(std::max(1, g.columns), std::max(1, rows));
  map_->data()->setRange(QCPRange(first, last), QCPRange(0, std::max(0, rows - 1)));
  map_->data()->fill(std::nan(""));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < g.columns; ++c) map_->data()->setCell(c, r, g.at(static_cast<std::size_t>(r), c));
  map_->setDataRange(g.max > g.min ? QCPRange(g.min, g.max) : QCPRange(g.min - 0.5, g.min + 0.5));
  scale_->axis()->setLabel(scale_title(g));
  plot_->xAxis->setRange(first - half - 0.5, last + half + 0.5);
  plot_->yAxis->setRange(-0.5, std::max(0, rows - 1) + 0.5);
  status_->setText(data_.series.empty() ? tr("This session has no per-rank series (steps, timers or collectives).")
                                        : tr("%1 ranks \u00d7 %2 steps; a straggler is a bright row. Wheel: zoom, drag: pan.")
                                              .arg(rows).arg(g.columns * g.steps_per_column));
  plot_->replot();
}

QString RankHeatMap::rankName(int rank) const {
  for (const auto& r : data_.ranks)
    if (r.rank == rank && !r.host.empty()) return QString("%1:%2").arg(QString::fromStdString(r.host)).arg(rank);
  return tr("rank %1").arg(rank);
}

QString RankHeatMap::cellText(int row, int column) const {
  const auto& g = data_.grid;
  if (row < 0 || column < 0 || row >= static_cast<int>(g.ranks.size()) || column >= g.columns) return {};
  const std::int64_t from = g.first_step + column * g.steps_per_column, to = from + g.steps_per_column - 1;
  const double v = g.at(static_cast<std::size_t>(row), column);
  const QString steps = from == to ? tr("step %1").arg(from) : tr("steps %1-%2").arg(from).arg(to);
  const QString value = std::isfinite(v) ? QString::number(v, 'g', 4) + " " + QString::fromStdString(g.series.unit)
                                         : tr("no value");
  return QString("%1 \u00b7 %2 \u00b7 %3: %4").arg(rankName(g.ranks[static_cast<std::size_t>(row)]), steps,
                                                  QString::fromStdString(g.series.title), value.trimmed());
}

void RankHeatMap::onMouseMove(QMouseEvent* event) {
  int column = 0, row = 0;
  const double x = plot_->xAxis->pixelToCoord(event->position().x());
  const double y = plot_->yAxis->pixelToCoord(event->position().y());
  map_->data()->coordToCell(x, y, &column, &row);
  const QString text = cellText(row, column);
  if (text.isEmpty() || !plot_->axisRect()->rect().contains(event->position().toPoint())) return QToolTip::hideText();
  QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

}  // namespace shardscope::gui
