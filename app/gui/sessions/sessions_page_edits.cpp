// SessionsPage, editing the list: rename, tag and delete sessions from the list's context menu,
// each through the sessions library (app/gui/sessions/session_edits.hpp) with its CLI twin reported.
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QTableView>

#include "app/gui/common/gui_export.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/session_edits.hpp"
#include "app/gui/sessions/sessions_page.hpp"

namespace shardscope::gui {
namespace {

std::vector<std::string> to_std(const QStringList& list) {
  std::vector<std::string> out;
  for (const auto& s : list) out.push_back(s.toStdString());
  return out;
}

}  // namespace

QString SessionsPage::uidOf(const SessionRef& session) const {
  for (int r = 0; r < catalog_->rowCount(); ++r)
    if (catalog_->row(r).file == session.file && catalog_->row(r).info.id == session.id)
      return QString::fromStdString(catalog_->row(r).info.uid);
  return QString::number(session.id);
}

void SessionsPage::showListMenu(const QPoint& pos) {
  const std::vector<SessionRef> refs = selectedRefs();
  QMenu menu(list_);
  if (refs.size() == 1) {
    connect(menu.addAction(tr("Rename\u2026")), &QAction::triggered, this, [this, refs] { askRename(refs[0]); });
    connect(menu.addAction(tr("Tags\u2026")), &QAction::triggered, this, [this, refs] { askTags(refs[0]); });
  }
  if (!refs.empty())
    connect(menu.addAction(tr("Delete %1 session(s)\u2026").arg(refs.size())), &QAction::triggered, this,
            [this, refs] { askDelete(refs); });
  if (!refs.empty()) {
    menu.addSeparator();
    connect(menu.addAction(tr("Export %1 session(s)' steps and series as CSV\u2026").arg(refs.size())), &QAction::triggered,
            this, [this, refs] { askExport(refs); });
  }
  menu.addSeparator();
  // The list's own columns: the selected rows when there is a selection, else every row shown.
  const QList<int> rows = selected_rows(list_);
  const QString which = rows.isEmpty() ? tr("all %1 rows").arg(proxy_->rowCount()) : tr("%1 selected rows").arg(rows.size());
  connect(menu.addAction(tr("Export the list as CSV (%1)\u2026").arg(which)), &QAction::triggered, this, [this, rows] {
    const QString message = export_model_csv(this, *proxy_, "sessions", rows);
    if (!message.isEmpty()) emit statusMessage(message);
  });
  connect(menu.addAction(tr("Copy the list as CSV (%1)").arg(which)), &QAction::triggered, this, [this, rows] {
    QApplication::clipboard()->setText(model_to_csv(*proxy_, rows));
    emit statusMessage(tr("Copied %1 rows as CSV").arg(rows.isEmpty() ? proxy_->rowCount() : rows.size()));
  });
  menu.exec(list_->viewport()->mapToGlobal(pos));
}

void SessionsPage::askExport(const std::vector<SessionRef>& sessions) {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Export the sessions' tables (one CSV per table) into"),
                                                        QFileInfo(QString::fromStdString(sessions.front().file)).path());
  if (!dir.isEmpty()) exportSessions(sessions, dir);
}

QString SessionsPage::exportSessions(const std::vector<SessionRef>& sessions, const QString& directory) {
  std::vector<std::string> uids;
  for (const auto& s : sessions) uids.push_back(uidOf(s).toStdString());
  const EditOutcome out = export_session_refs(sessions, directory.toStdString());
  const QString error = QString::fromStdString(out.error);
  emit statusMessage(out.ok() ? tr("Wrote %1 files into %2: %3")
                                    .arg(out.files.size())
                                    .arg(directory, QString::fromStdString(export_command(sessions.front().file, uids,
                                                                                          directory.toStdString())))
                              : error);
  return error;
}

void SessionsPage::askRename(const SessionRef& session) {
  bool ok = false;
  const QString current = QString::fromStdString(session.label).section(" #", 0, 0);
  const QString name = QInputDialog::getText(this, tr("Rename session"), tr("New name:"), QLineEdit::Normal, current, &ok);
  if (ok) renameSession(session, name);
}

void SessionsPage::askTags(const SessionRef& session) {
  QStringList current;
  for (int r = 0; r < catalog_->rowCount(); ++r)
    if (catalog_->row(r).file == session.file && catalog_->row(r).info.id == session.id)
      for (const auto& t : catalog_->row(r).info.tags) current << QString::fromStdString(t);
  bool ok = false;
  const QString text = QInputDialog::getText(this, tr("Session tags"), tr("Tags, separated by commas:"),
                                             QLineEdit::Normal, current.join(", "), &ok);
  if (!ok) return;
  QStringList wanted;
  for (const auto& t : split_tag_list(text.toStdString())) wanted << QString::fromStdString(t);
  QStringList add, remove;
  for (const QString& t : wanted)
    if (!current.contains(t)) add << t;
  for (const QString& t : current)
    if (!wanted.contains(t)) remove << t;
  tagSession(session, add, remove);
}

void SessionsPage::askDelete(const std::vector<SessionRef>& sessions) {
  QStringList names;
  for (const auto& s : sessions) names << QString::fromStdString(s.label);
  const auto answer = QMessageBox::warning(this, tr("Delete sessions"),
                                           tr("Delete %1 and all their records? This cannot be undone.\n\n%2")
                                               .arg(names.join(", "))
                                               .arg(tr("(The same from a terminal: shardscope sessions delete ... --db FILE)")),
                                           QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  if (answer == QMessageBox::Yes) deleteSessions(sessions);
}

QString SessionsPage::renameSession(const SessionRef& session, const QString& name) {
  const std::string uid = uidOf(session).toStdString();
  const EditOutcome out = rename_session_ref(session, name.toStdString());
  const QString error = QString::fromStdString(out.error);
  emit statusMessage(out.ok() ? tr("Renamed: %1").arg(QString::fromStdString(rename_command(session.file, uid, name.toStdString())))
                              : error);
  if (out.ok()) refresh();
  return error;
}

QString SessionsPage::tagSession(const SessionRef& session, const QStringList& add, const QStringList& remove) {
  const std::string uid = uidOf(session).toStdString();
  const EditOutcome out = edit_tags_ref(session, to_std(add), to_std(remove));
  const QString error = QString::fromStdString(out.error);
  emit statusMessage(out.ok() ? tr("Tagged: %1").arg(QString::fromStdString(tag_command(session.file, uid, to_std(add), to_std(remove))))
                              : error);
  if (out.ok()) refresh();
  return error;
}

QString SessionsPage::deleteSessions(const std::vector<SessionRef>& sessions) {
  std::vector<std::string> uids;
  for (const auto& s : sessions) uids.push_back(uidOf(s).toStdString());
  const EditOutcome out = delete_session_refs(sessions);
  const QString error = QString::fromStdString(out.error);
  emit statusMessage(out.ok() && !sessions.empty()
                         ? tr("Deleted: %1").arg(QString::fromStdString(delete_command(sessions.front().file, uids)))
                         : error);
  if (out.ok()) refresh();
  return error;
}

}  // namespace shardscope::gui
