#include "app/gui/profile_view.hpp"

#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "app/gui/gui_export.hpp"
#include "app/gui/profile_timeline.hpp"
#include "app/gui/rows_table_model.hpp"

namespace shardscope::gui {
namespace {

QVariant optional_ms(const std::optional<double>& v) { return v ? QVariant(*v) : QVariant(QStringLiteral("-")); }

}  // namespace

ProfileView::ProfileView(QWidget* parent) : QWidget(parent) {
  kernels_ = new RowsTableModel({tr("rank"), tr("kernel"), tr("calls"), tr("total ms"), tr("mean us"), tr("share %"),
                                 tr("communication")}, this);
  collectives_ = new RowsTableModel({tr("op"), tr("count"), tr("total bytes"), tr("total latency s"),
                                     tr("mean algbw GB/s"), tr("mean busbw GB/s")}, this);
  overlap_ = new RowsTableModel({tr("rank"), tr("method"), tr("comm ms"), tr("hidden ms"), tr("exposed ms"),
                                 tr("hidden %"), tr("collectives"), tr("note")}, this);
  watcher_ = new QFutureWatcher<std::shared_ptr<const ProfileData>>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, [this] { show(watcher_->result()); });

  header_ = new QLabel(tr("Select one session and choose Profile to see its profiled window."));
  header_->setWordWrap(true);
  tabs_ = new QTabWidget;
  tabs_->addTab(buildTimelineTab(), tr("Timeline"));
  addTableTab(kernels_, tr("Top kernels"), "top_kernels");
  addTableTab(collectives_, tr("Collectives"), "collectives");
  addTableTab(overlap_, tr("Comm overlap"), "comm_overlap");
  analyses_ = new QPlainTextEdit;
  analyses_->setReadOnly(true);
  analyses_->setLineWrapMode(QPlainTextEdit::NoWrap);
  analyses_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  tabs_->addTab(analyses_, tr("Analyses"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(header_);
  layout->addWidget(tabs_, 1);
}

ProfileView::~ProfileView() { watcher_->waitForFinished(); }

QWidget* ProfileView::buildTimelineTab() {
  auto* tab = new QWidget;
  timeline_ = new ProfileTimeline;
  auto* scroll = new QScrollArea;
  scroll->setWidget(timeline_);
  scroll->setWidgetResizable(true);
  auto* reset = new QPushButton(tr("Show whole window"));
  reset->setToolTip(tr("Zoom out to the whole profiled window (or double-click the timeline)"));
  connect(reset, &QPushButton::clicked, timeline_, &ProfileTimeline::resetZoom);
  auto* png = new QPushButton(tr("Export PNG\u2026"));
  connect(png, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export PNG"), "timeline.png", tr("PNG (*.png)"));
    if (path.isEmpty()) return;
    const bool ok = timeline_->grab().save(path, "PNG");
    emit statusMessage(ok ? tr("Wrote %1").arg(path) : tr("Could not write %1").arg(path));
  });
  auto* legend = new QLabel(tr("<span style='color:#2aa0b4'>\u25a0</span> kernel &nbsp; "
                               "<span style='color:#d62728'>\u25a0</span> collective (NCCL) &nbsp; "
                               "<span style='color:#2ca02c'>\u25a0</span> memcpy &nbsp; "
                               "<span style='color:#7f7f7f'>\u25a0</span> memset &nbsp; "
                               "<span style='color:#9a86d2'>\u25a0</span> NVTX &nbsp;&nbsp; "
                               "wheel: zoom, drag: pan, hover: details"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(legend, 1);
  bar->addWidget(reset);
  bar->addWidget(png);
  auto* layout = new QVBoxLayout(tab);
  layout->addLayout(bar);
  layout->addWidget(scroll, 1);
  return tab;
}

QTableView* ProfileView::addTableTab(RowsTableModel* model, const QString& title, const QString& export_name) {
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model);
  proxy->setSortRole(RowsTableModel::kSortRole);
  auto* view = new QTableView;
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  add_table_export_menu(view, export_name, [this](const QString& m) { emit statusMessage(m); });
  tabs_->addTab(view, title);
  return view;
}

void ProfileView::load(const SessionRef& session) {
  header_->setText(tr("Loading the profiled window of %1\u2026").arg(QString::fromStdString(session.label)));
  watcher_->setFuture(QtConcurrent::run([session] { return load_profile(session); }));
}

void ProfileView::show(std::shared_ptr<const ProfileData> data) {
  data_ = std::move(data);
  timeline_->setData(data_);
  fillTables();
  analyses_->setPlainText(QString::fromStdString(data_->error.empty() ? data_->analyses_text : data_->error));
  if (!data_->error.empty())
    header_->setText(tr("<b>Cannot read the profile:</b> %1").arg(QString::fromStdString(data_->error).toHtmlEscaped()));
  else
    header_->setText(tr("<b>%1</b>: %2 records on %3 timeline rows over %4")
                         .arg(QString::fromStdString(data_->session.label).toHtmlEscaped())
                         .arg(data_->items)
                         .arg(data_->rows.size())
                         .arg(QString::fromStdString(format_duration_ns(double(data_->end_ns - data_->start_ns)))));
  emit statusMessage(tr("Profile of %1 loaded").arg(QString::fromStdString(data_->session.label)));
  emit profileLoaded();
}

void ProfileView::fillTables() {
  std::vector<QVariantList> kernels, collectives, overlap;
  for (const auto& rank : data_->analyses.top_kernels)
    for (const auto& k : rank.kernels)
      kernels.push_back({rank.rank, QString::fromStdString(k.name), static_cast<qlonglong>(k.calls), k.total_ms,
                         k.mean_us, 100 * k.share, k.is_communication ? tr("yes") : tr("no")});
  for (const auto& c : data_->collectives)
    collectives.push_back({QString::fromStdString(c.op), static_cast<qlonglong>(c.count),
                           static_cast<qlonglong>(c.total_bytes), c.total_latency_s, c.mean_algbw_gbps,
                           c.mean_busbw_gbps});
  for (const auto& o : data_->analyses.comm_overlap)
    overlap.push_back({o.rank, QString(profiler::overlap_method_name(o.method)), optional_ms(o.comm_ms),
                       optional_ms(o.hidden_ms), optional_ms(o.exposed_ms),
                       o.hidden_fraction ? QVariant(100 * *o.hidden_fraction) : QVariant(QStringLiteral("-")),
                       static_cast<qlonglong>(o.comm_kernels), QString::fromStdString(o.note)});
  kernels_->setRows(std::move(kernels));
  collectives_->setRows(std::move(collectives));
  overlap_->setRows(std::move(overlap));
}

QString ProfileView::analysesText() const { return analyses_->toPlainText(); }

}  // namespace shardscope::gui
