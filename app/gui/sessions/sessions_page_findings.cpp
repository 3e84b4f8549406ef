// The Sessions page's Findings tab: the run doctor's findings of every compared session (what
// `sessions show` lists: stored by the launcher or `watch`, and found in the steps, timers and
// collective marks), coloured by severity; a double-click shows the finding's steps in the curves.
// With two or more sessions each later session's findings are marked against the baseline (the
// first) as `sessions compare` marks them (diagnosis::compare_findings): kept, new, and gone rows
// for the baseline's findings the later session no longer has; the marks colour the rows.
#include <algorithm>

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/common/gui_export.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/sessions/verdict_models.hpp"
#include "diagnosis/findings_compare.hpp"
#include "sessions/display_text.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

RowTone tone_of(const ss::Finding& f) {
  if (f.severity == "error") return RowTone::kRegression;
  if (f.severity == "warning") return RowTone::kWithinThreshold;
  return RowTone::kPlain;
}

std::string steps_text(const ss::Finding& f) {
  if (f.first_step < 0) return "";
  return f.first_step == f.last_step ? std::to_string(f.first_step)
                                     : std::to_string(f.first_step) + "-" + std::to_string(f.last_step);
}

std::string ranks_text(const ss::Finding& f) {
  std::string out;
  for (int r : f.ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

RowTone tone_of(diagnosis::FindingChange change, const ss::Finding& f) {
  switch (change) {
    case diagnosis::FindingChange::kNew: return RowTone::kRegression;
    case diagnosis::FindingChange::kGone: return RowTone::kImprovement;
    case diagnosis::FindingChange::kKept: return RowTone::kWithinThreshold;
    default: return tone_of(f);
  }
}

// `mark` is "" for a session shown alone, else finding_change_name's word.
TableRow finding_row(const std::string& session, const std::string& mark, const ss::Finding& f) {
  const auto shown = [](const std::string& text) { return ss::escape_control_characters(text); };
  TableRow row;
  for (const std::string& text : {session, mark, f.severity, shown(f.kind), steps_text(f), ranks_text(f), shown(f.summary),
                                  shown(f.suggested_fix)})
    row.cells.push_back(TableCell{text, std::nullopt});
  if (f.first_step >= 0) row.cells[4].value = static_cast<double>(f.first_step);
  row.tone = tone_of(f);
  row.tooltip = shown(f.summary + (f.evidence.empty() ? "" : "\n\n" + f.evidence) +
                      (f.suggested_fix.empty() ? "" : "\n\nfix: " + f.suggested_fix));
  return row;
}

}  // namespace

QWidget* SessionsPage::buildFindingsTab() {
  findings_model_ = new TextTableModel(this);
  findings_model_->setToneColumn(2);
  auto* view = new QTableView;
  view->setObjectName("findings_table");
  view->setModel(findings_model_);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setWordWrap(false);
  view->setToolTip(tr("Double-click a finding to see its steps in the curves; hover for its evidence"));
  connect(view, &QTableView::doubleClicked, this, [this](const QModelIndex& i) { openFinding(i.row()); });
  connect(findings_model_, &QAbstractItemModel::modelReset, view, [view] {
    view->resizeColumnsToContents();
    for (int c = 0; c < view->model()->columnCount(); ++c)
      view->setColumnWidth(c, std::min(view->columnWidth(c), 420));
  });
  add_table_export_menu(view, "findings", [this](const QString& m) { emit statusMessage(m); });
  findings_note_ = new QLabel;
  findings_note_->setObjectName("findings_note");
  findings_note_->setWordWrap(true);
  auto* tab = new QWidget;
  auto* layout = new QVBoxLayout(tab);
  layout->addWidget(findings_note_);
  layout->addWidget(view, 1);
  return tab;
}

// The doctor's review after the fact reads every rank's steps, timers and marks (seconds at 1,024
// ranks), so it runs after the comparison's curves are drawn, not before.
void SessionsPage::readFindings() {
  findings_note_->setText(tr("Reading the run doctor's findings\u2026"));
  Comparison sessions_only;
  sessions_only.sessions = comparison_.sessions;
  findings_watcher_->setFuture(QtConcurrent::run([sessions_only]() mutable {
    read_findings(sessions_only);
    return sessions_only;
  }));
}

void SessionsPage::onFindingsRead() {
  const Comparison read = findings_watcher_->result();
  if (read.sessions.size() != comparison_.sessions.size()) return;  // a newer comparison took over
  for (std::size_t s = 0; s < read.sessions.size(); ++s)
    if (read.sessions[s].file != comparison_.sessions[s].file || read.sessions[s].id != comparison_.sessions[s].id) return;
  comparison_.findings = read.findings;
  comparison_.findings_errors = read.findings_errors;
  showFindings();
}

void SessionsPage::showFindings() {
  TextTable table;
  table.headers = {"session", "vs baseline", "severity", "kind", "steps", "ranks", "summary", "fix"};
  finding_rows_.clear();
  int errors = 0;
  const std::size_t sessions = std::min(comparison_.findings.size(), comparison_.sessions.size());
  const bool compared = sessions > 1;
  const auto rows = diagnosis::compare_findings({comparison_.findings.begin(), comparison_.findings.begin() + std::ptrdiff_t(sessions)});
  for (std::size_t s = 0; s < sessions; ++s)
    for (const auto& r : rows) {
      const diagnosis::FindingChange change = r.changes[s];
      if (change == diagnosis::FindingChange::kAbsent) continue;
      // A gone row shows the baseline's finding: what this session no longer has.
      const ss::Finding& f = change == diagnosis::FindingChange::kGone ? *r.cells.front() : *r.cells[s];
      TableRow row = finding_row(comparison_.sessions[s].label, compared ? diagnosis::finding_change_name(change) : "", f);
      if (compared) row.tone = tone_of(change, f);
      table.rows.push_back(std::move(row));
      finding_rows_.push_back(f);
      errors += f.severity == "error" && change != diagnosis::FindingChange::kGone;
    }
  findings_model_->setToneColumn(compared ? 1 : 2);
  findings_model_->setTable(std::move(table));
  showFindingsNote(errors, rows, sessions);
}

void SessionsPage::showFindingsNote(int errors, const std::vector<diagnosis::FindingRow>& rows, std::size_t sessions) {
  const auto count = [&](diagnosis::FindingChange change) {
    return std::count_if(rows.begin(), rows.end(), [&](const auto& r) {
      return std::find(r.changes.begin() + 1, r.changes.end(), change) != r.changes.end();
    });
  };
  QString text = finding_rows_.empty()
                     ? tr("No findings: the run doctor saw no hang, straggler, numerics problem, OOM or failed "
                          "start in these sessions.")
                     : tr("%1 %2, %3 of them %4. Double-click one to see its steps in the curves.")
                           .arg(finding_rows_.size())
                           .arg(finding_rows_.size() == 1 ? tr("finding") : tr("findings"))
                           .arg(errors)
                           .arg(errors == 1 ? tr("an error") : tr("errors"));
  if (sessions > 1 && !finding_rows_.empty())
    text += " " + tr("Against the baseline (the first session), as sessions compare marks them: %1 kept, %2 new, %3 gone "
                     "(a finding is the same when its kind and ranks agree).")
                      .arg(count(diagnosis::FindingChange::kKept))
                      .arg(count(diagnosis::FindingChange::kNew))
                      .arg(count(diagnosis::FindingChange::kGone));
  for (const auto& why : comparison_.findings_errors) text += "\n" + tr("Not read: %1").arg(QString::fromStdString(why));
  findings_note_->setText(text);
}

void SessionsPage::openFinding(int row) {
  if (row < 0 || row >= static_cast<int>(finding_rows_.size())) return;
  const ss::Finding& f = finding_rows_[static_cast<std::size_t>(row)];
  showTab(tr("Curves"));
  if (f.first_step < 0) {
    emit statusMessage(tr("This finding names no step: %1").arg(QString::fromStdString(ss::escape_control_characters(f.kind))));
    return;
  }
  // Its steps with as much again on each side (at least 10 steps; none before step 0), so the
  // change is seen in context.
  const double span = std::max<double>(10, static_cast<double>(f.last_step - f.first_step));
  for (auto& [metric, plot] : charts_) {
    plot->xAxis->setRange(std::max(0.0, static_cast<double>(f.first_step) - span), static_cast<double>(f.last_step) + span);
    plot->replot();
  }
  emit statusMessage(tr("%1 at step %2%3")
                         .arg(QString::fromStdString(ss::escape_control_characters(f.kind)),
                              QString::fromStdString(steps_text(f)),
                              f.ranks.empty() ? QString() : tr(", rank %1").arg(QString::fromStdString(ranks_text(f)))));
}

}  // namespace shardscope::gui
