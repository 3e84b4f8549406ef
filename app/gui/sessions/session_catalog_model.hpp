#pragma once
// The list of sessions across the open session files, and the filter in front of it: one text
// field matched against name, config hash, version, host, tags and file (as `sessions list`
// filters do), plus a status choice.

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include "app/gui/sessions/compare_data.hpp"

namespace shardscope::gui {

/// The Hosts column: "node1 (2 ranks), node2 (2 ranks)", the host's name for a one-host run, and
/// "unknown" when no host was recorded (an imported run whose files do not name one).
QString hosts_summary(const std::vector<sessions::SessionHost>& hosts);

class SessionCatalogModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kName, kStarted, kStatus, kSteps, kRanks, kHosts, kTags, kVersion, kConfig, kFile, kId, kColumnCount };
  /// Raw values for sorting and tests (numbers as numbers, times as Unix seconds).
  static constexpr int kSortRole = Qt::UserRole;

  explicit SessionCatalogModel(QObject* parent = nullptr);

  void setRows(std::vector<CatalogRow> rows);
  const CatalogRow& row(int index) const { return rows_[static_cast<std::size_t>(index)]; }
  /// The reference used to compare or profile the session on `index`'s row.
  SessionRef ref(int index) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<CatalogRow> rows_;
};

class SessionFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit SessionFilterProxy(QObject* parent = nullptr);

  /// Words that must all appear (case-insensitively) in the row's text fields.
  void setText(const QString& text);
  /// "" for every status, else "running", "completed", "failed", "interrupted", "hung" (stopped by launch --on-hang stop).
  void setStatus(const QString& status);

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  QStringList words_;
  QString status_;
};

}  // namespace shardscope::gui
