#include "app/gui/profile/profile_panes.hpp"

#include <qcustomplot.h>

#include "app/gui/sessions/compare_charts.hpp"

namespace shardscope::gui {
namespace {

QVariant optional_value(const std::optional<double>& v) { return v ? QVariant(*v) : QVariant(QStringLiteral("-")); }

/// One stacked layer per (name, values by rank index); ranks on the x axis as "rank R".
void draw_stacked(QCustomPlot* plot, const std::vector<int>& ranks,
                  const std::vector<std::pair<QString, std::vector<double>>>& layers, const QString& y_label) {
  plot->clearPlottables();
  plot->clearItems();
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  QVector<double> keys;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    keys << double(i + 1);
    ticker->addTick(double(i + 1), QObject::tr("rank %1").arg(ranks[i]));
  }
  QCPBars* below = nullptr;
  double highest = 0;
  std::vector<double> totals(ranks.size(), 0);
  std::size_t color = 0;
  for (const auto& [name, values] : layers) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setName(name);
    bars->setPen(Qt::NoPen);
    bars->setBrush(series_color(color++));
    bars->setWidth(0.6);
    QVector<double> v;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const double value = i < values.size() ? std::max(0.0, values[i]) : 0;
      v << value;
      totals[i] += value;
      highest = std::max(highest, totals[i]);
    }
    bars->setData(keys, v, true);
    if (below) bars->moveAbove(below);
    below = bars;
  }
  plot->xAxis->setTicker(ticker);
  plot->xAxis->setRange(0.4, double(ranks.size()) + 0.6);
  plot->yAxis->setLabel(y_label);
  plot->yAxis->setRange(0, highest > 0 ? highest * 1.2 : 1);
  plot->legend->setVisible(!layers.empty() && !ranks.empty());
  plot->legend->setFont(QFont(plot->font().family(), 8));
  place_legend_below(plot, 2);
  if (ranks.empty()) {
    auto* note = new QCPItemText(plot);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.5);
    note->setText(QObject::tr("not recorded in this selection"));
    note->setColor(Qt::gray);
  }
  plot->replot();
}

}  // namespace

TableRows phase_rows(const profiler::PhaseBreakdown& phases) {
  TableRows t;
  t.headers << QObject::tr("rank") << QObject::tr("steps");
  for (const auto& c : phases.columns) t.headers << QString::fromStdString(c.name) + (c.top_level ? "" : " *");
  t.headers << QObject::tr("other") << QObject::tr("step time");
  for (const auto& r : phases.ranks) {
    QVariantList row{r.rank, static_cast<qlonglong>(r.counted_steps)};
    for (const auto& m : r.mean_ms) row << optional_value(m);
    row << optional_value(r.mean_other_ms) << optional_value(r.mean_step_ms);
    t.rows.push_back(row);
  }
  return t;
}

TableRows overlap_rows(const std::vector<profiler::CommOverlapRank>& ranks) {
  TableRows t{{QObject::tr("rank"), QObject::tr("method"), QObject::tr("comm ms"), QObject::tr("hidden ms"),
               QObject::tr("exposed ms"), QObject::tr("hidden %"), QObject::tr("collectives"), QObject::tr("note")},
              {}};
  for (const auto& o : ranks)
    t.rows.push_back({o.rank, QString(profiler::overlap_method_name(o.method)), optional_value(o.comm_ms),
                      optional_value(o.hidden_ms), optional_value(o.exposed_ms),
                      o.hidden_fraction ? QVariant(100 * *o.hidden_fraction) : QVariant(QStringLiteral("-")),
                      static_cast<qlonglong>(o.comm_kernels), QString::fromStdString(o.note)});
  return t;
}

TableRows kernel_rows(const std::vector<profiler::TopKernelsRank>& ranks) {
  TableRows t{{QObject::tr("rank"), QObject::tr("kernel"), QObject::tr("calls"), QObject::tr("total ms"),
               QObject::tr("mean us"), QObject::tr("share %"), QObject::tr("communication")},
              {}};
  for (const auto& rank : ranks)
    for (const auto& k : rank.kernels)
      t.rows.push_back({rank.rank, QString::fromStdString(k.name), static_cast<qlonglong>(k.calls), k.total_ms, k.mean_us,
                        100 * k.share, k.is_communication ? QObject::tr("yes") : QObject::tr("no")});
  return t;
}

TableRows collective_rows(const std::vector<sessions::CommOpStat>& ops) {
  TableRows t{{QObject::tr("op"), QObject::tr("count"), QObject::tr("total bytes"), QObject::tr("total latency s"),
               QObject::tr("mean algbw GB/s"), QObject::tr("mean busbw GB/s")},
              {}};
  for (const auto& c : ops)
    t.rows.push_back({QString::fromStdString(c.op), static_cast<qlonglong>(c.count), static_cast<qlonglong>(c.total_bytes),
                      c.total_latency_s, c.mean_algbw_gbps, c.mean_busbw_gbps});
  return t;
}

TableRows idle_rows(const std::vector<profiler::DeviceIdle>& devices) {
  TableRows t{{QObject::tr("rank"), QObject::tr("device"), QObject::tr("window ms"), QObject::tr("busy ms"),
               QObject::tr("idle ms"), QObject::tr("idle %"), QObject::tr("activities")},
              {}};
  for (const auto& d : devices)
    t.rows.push_back({d.rank, d.device, d.window_ms, d.busy_ms, d.idle_ms, 100 * d.idle_fraction,
                      static_cast<qlonglong>(d.activities)});
  return t;
}

TableRows straggler_rows(const profiler::StragglerAnalysis& stragglers) {
  TableRows t{{QObject::tr("step"), QObject::tr("ranks"), QObject::tr("slowest rank"), QObject::tr("slowest ms"),
               QObject::tr("median ms"), QObject::tr("fastest ms"), QObject::tr("lag ms")},
              {}};
  for (const auto& s : stragglers.steps)
    t.rows.push_back({static_cast<qlonglong>(s.step), s.ranks, s.slowest_rank, s.slowest_ms, s.median_ms, s.fastest_ms,
                      s.lag_ms});
  return t;
}

void draw_phase_chart(QCustomPlot* plot, const profiler::PhaseBreakdown& phases) {
  std::vector<int> ranks;
  for (const auto& r : phases.ranks) ranks.push_back(r.rank);
  std::vector<std::pair<QString, std::vector<double>>> layers;
  for (std::size_t c = 0; c < phases.columns.size(); ++c) {
    if (!phases.columns[c].top_level) continue;
    std::vector<double> values;
    for (const auto& r : phases.ranks) values.push_back(r.mean_ms[c].value_or(0));
    layers.emplace_back(QString::fromStdString(phases.columns[c].name), values);
  }
  std::vector<double> other;
  for (const auto& r : phases.ranks) other.push_back(r.mean_other_ms.value_or(0));
  if (!layers.empty()) layers.emplace_back(QObject::tr("other"), other);
  draw_stacked(plot, layers.empty() ? std::vector<int>{} : ranks, layers, QObject::tr("mean ms per step"));
}

void draw_overlap_chart(QCustomPlot* plot, const std::vector<profiler::CommOverlapRank>& ranks) {
  std::vector<int> shown;
  std::vector<double> hidden, exposed;
  for (const auto& o : ranks) {
    if (!o.hidden_ms && !o.exposed_ms) continue;
    shown.push_back(o.rank);
    hidden.push_back(o.hidden_ms.value_or(0));
    exposed.push_back(o.exposed_ms.value_or(0));
  }
  draw_stacked(plot, shown, {{QObject::tr("hidden behind compute"), hidden}, {QObject::tr("exposed (the step waited)"), exposed}},
               QObject::tr("communication ms"));
}

}  // namespace shardscope::gui
