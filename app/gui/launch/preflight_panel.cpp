#include "app/gui/launch/preflight_panel.hpp"

#include <QBrush>
#include <QHeaderView>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "app/gui/common/cli_locator.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::gui {
namespace {

using json = nlohmann::json;

QString text_of(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? QString::fromStdString(j.at(key).get<std::string>()) : QString();
}

QStringList strings_of(const json& j, const char* key) {
  QStringList out;
  if (j.contains(key) && j.at(key).is_array())
    for (const auto& s : j.at(key))
      if (s.is_string()) out << QString::fromStdString(s.get<std::string>());
  return out;
}

// The columns the CLI's own table has (format_preflight), from one host's facts.
PreflightRow row_of(const json& h, bool cpu) {
  PreflightRow row;
  row.host = text_of(h, "host");
  row.ok = h.value("ok", false);
  row.reachable = h.value("reachable", false);
  row.problems = strings_of(h, "problems");
  row.warnings = strings_of(h, "warnings");
  const int slot_count = h.value("slots", 0);
  const json facts = h.value("facts", json());
  row.version = row.shm = row.port = "-";
  row.ranks = cpu ? QString("%1 CPU").arg(slot_count) : QStringLiteral("-");
  if (!facts.is_object()) return row;
  row.version = text_of(facts, "shardscope_version") + " (" + text_of(facts, "git_hash").left(10) + ")";
  if (!cpu) {
    const QStringList models = strings_of(facts, "gpu_models");
    row.ranks = QString("%1%2 (%3)").arg(facts.value("gpu_count", 0)).arg(models.isEmpty() ? "" : " x " + models.front()).arg(slot_count);
  }
  if (facts.contains("shm_bytes") && facts.at("shm_bytes").is_number())
    row.shm = QString::fromStdString(sessions::format_bytes(static_cast<std::uint64_t>(facts.at("shm_bytes").get<double>())));
  row.port = facts.value("master_port_free", true) ? QObject::tr("free") : QObject::tr("in use");
  return row;
}

QString allreduce_text(const json& a, std::size_t hosts) {
  return QObject::tr("%1 over %2 across %3 host(s), %4 rank(s): %5 ms, algbw %6 GB/s, busbw %7 GB/s%8")
      .arg(QString::fromStdString(sessions::format_bytes(a.value("bytes", std::uint64_t{0}))))
      .arg(text_of(a, "backend"))
      .arg(hosts)
      .arg(a.value("world_size", 0))
      .arg(a.value("mean_ms", 0.0), 0, 'f', 3)
      .arg(a.value("algbw_gbps", 0.0), 0, 'f', 3)
      .arg(a.value("busbw_gbps", 0.0), 0, 'f', 3)
      .arg(a.value("correct", false) ? QString() : QObject::tr(", WRONG SUM"));
}

}  // namespace

PreflightResult parse_preflight_json(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("schema", "") != "shardscope.preflight/1" || !j.contains("hosts") || !j.at("hosts").is_array())
    throw std::invalid_argument("the preflight printed no shardscope.preflight/1 JSON report");
  PreflightResult result;
  result.ok = j.value("ok", false);
  result.cpu = j.value("cpu", false);
  result.master_port = j.value("master_port", 0);
  for (const auto& h : j.at("hosts")) result.rows.push_back(row_of(h, result.cpu));
  if (j.contains("allreduce") && j.at("allreduce").is_object())
    result.allreduce = allreduce_text(j.at("allreduce"), result.rows.size());
  result.allreduce_problem = text_of(j, "allreduce_problem");
  return result;
}

PreflightPanel::PreflightPanel(std::function<std::vector<std::string>()> arguments, QWidget* parent)
    : QWidget(parent), arguments_(std::move(arguments)) {
  button_ = new QPushButton(tr("Preflight"));
  button_->setToolTip(tr("Check every host: reachable, shardscope build, GPUs against slots, /dev/shm, the port, "
                         "and a short all-reduce (shardscope launch --preflight)"));
  table_ = new QTableWidget(0, 7);
  table_->setHorizontalHeaderLabels({tr("host"), tr("reachable"), tr("shardscope"), tr("GPUs (slots)"), tr("/dev/shm"),
                                     tr("port"), tr("status and fix")});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(true);
  summary_ = new QLabel(tr("Not run yet."));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  // Under a short tab (a 1366x768 window's logs pane) the table and a long summary cannot both
  // have their height: the summary scrolls rather than lose its last lines (each host's fix).
  auto* summary_scroll = new QScrollArea;
  summary_scroll->setWidget(summary_);
  summary_scroll->setWidgetResizable(true);
  summary_scroll->setFrameShape(QFrame::NoFrame);
  summary_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(table_, 1);
  layout->addWidget(summary_scroll);
  connect(button_, &QPushButton::clicked, this, &PreflightPanel::run);
}

PreflightPanel::~PreflightPanel() {
  if (!button_->parent()) delete button_;  // never placed by the page
  if (isRunning()) {
    process_->kill();
    process_->waitForFinished(3000);
  }
}

bool PreflightPanel::isRunning() const { return process_ && process_->state() != QProcess::NotRunning; }

void PreflightPanel::run() {
  if (isRunning()) return;
  std::vector<std::string> args;
  try {
    args = arguments_();
  } catch (const std::exception& e) {
    showSummary(tr("<b>Cannot check:</b> %1").arg(QString::fromStdString(e.what()).toHtmlEscaped()), true);
    return;
  }
  QStringList qargs;
  for (const auto& a : args) qargs << QString::fromStdString(a);
  delete process_;
  process_ = new QProcess(this);
  connect(process_, &QProcess::finished, this,
          [this](int code, QProcess::ExitStatus status) { onFinished(status == QProcess::CrashExit ? -1 : code); });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    showSummary(cli_missing_message(process_->program(), process_->errorString()).toHtmlEscaped(), true);
    button_->setEnabled(true);
  });
  button_->setEnabled(false);
  table_->setRowCount(0);
  showSummary(tr("Checking the hosts\u2026 (%1)")
                  .arg(QString::fromStdString(shell_command("shardscope", args)).toHtmlEscaped()), false);
  process_->start(shardscope_cli_path(), qargs);
  emit started();
}

void PreflightPanel::onFinished(int exit_code) {
  button_->setEnabled(true);
  const std::string out = process_->readAllStandardOutput().toStdString();
  try {
    result_ = parse_preflight_json(out);
  } catch (const std::invalid_argument&) {
    // No report: the flags or the hostfile were refused before any host was asked; stderr says why.
    const QString err = QString::fromUtf8(process_->readAllStandardError()).trimmed();
    result_ = {};
    showSummary(tr("<b>Preflight failed</b> (exit status %1): %2").arg(exit_code).arg(err.toHtmlEscaped()), true);
    emit finished(exit_code);
    return;
  }
  showResult(exit_code);
  emit finished(exit_code);
}

void PreflightPanel::showResult(int exit_code) {
  table_->setRowCount(static_cast<int>(result_.rows.size()));
  table_->horizontalHeaderItem(3)->setText(result_.cpu ? tr("ranks") : tr("GPUs (slots)"));
  table_->horizontalHeaderItem(5)->setText(tr("port %1").arg(result_.master_port));
  for (int r = 0; r < table_->rowCount(); ++r) {
    const PreflightRow& row = result_.rows[std::size_t(r)];
    QStringList status = {row.ok ? (row.warnings.isEmpty() ? tr("ok") : tr("ok (warnings)")) : tr("FAILED")};
    status << row.problems;
    for (const QString& w : row.warnings) status << tr("warning: %1").arg(w);
    const QStringList cells = {row.host, row.reachable ? tr("yes") : tr("no"), row.version, row.ranks, row.shm, row.port,
                               status.join('\n')};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(cells[c]);
      if (!row.ok) item->setForeground(QBrush(QColor(176, 0, 32)));
      else if (!row.warnings.isEmpty() && c == 6) item->setForeground(QBrush(QColor(170, 110, 0)));
      table_->setItem(r, c, item);
    }
  }
  table_->resizeColumnsToContents();
  table_->resizeRowsToContents();
  QString text = result_.ok ? tr("<b>Preflight OK</b>") : tr("<b>Preflight FAILED</b>");
  text += tr(" (exit status %1)").arg(exit_code);
  // Each problem in full with its fix, as the CLI prints them under its table (a cell elides them).
  for (const PreflightRow& row : result_.rows) {
    for (const QString& p : row.problems) text += "<br>" + (row.host + ": " + p).toHtmlEscaped();
    for (const QString& w : row.warnings) text += "<br>" + (row.host + tr(": warning: ") + w).toHtmlEscaped();
  }
  if (!result_.allreduce.isEmpty()) text += "<br>" + tr("all-reduce: %1").arg(result_.allreduce.toHtmlEscaped());
  if (!result_.allreduce_problem.isEmpty())
    text += "<br>" + tr("all-reduce: %1").arg(result_.allreduce_problem.toHtmlEscaped());
  showSummary(text, !result_.ok);
}

void PreflightPanel::showSummary(const QString& html, bool error) {
  summary_->setText(html);
  summary_->setStyleSheet(error ? "QLabel { background: #fde2e1; color: #7a0b0b; padding: 4px; }"
                                : "QLabel { padding: 4px; }");
}

}  // namespace shardscope::gui
