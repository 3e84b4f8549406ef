#pragma once
// Qt models over the configs library's results for the Config Editor: the diagnostics list
// (severity, line, message, hint, code) and the resolved config (path, value, source, note) with
// a "only non-default keys" filter. Plus the line diff between the file on disk and the editor.

#include <QAbstractTableModel>
#include <string>
#include <vector>

#include "configs/config_validator.hpp"

namespace shardscope::gui {

class DiagnosticsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kSeverity, kLine, kMessage, kHint, kCode, kColumnCount };
  explicit DiagnosticsModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  void setDiagnostics(std::vector<configs::Diagnostic> diagnostics);
  const configs::Diagnostic& diagnostic(int row) const { return diagnostics_[static_cast<std::size_t>(row)]; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<configs::Diagnostic> diagnostics_;
};

class ResolvedModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kPath, kValue, kSource, kNote, kColumnCount };
  explicit ResolvedModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  void setResolved(std::vector<configs::ResolvedValue> resolved);
  /// Keeps only values not taken from DeepSpeed's defaults.
  void setOnlyNonDefault(bool only);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  void refilter();
  std::vector<configs::ResolvedValue> all_;
  std::vector<configs::ResolvedValue> shown_;
  bool only_non_default_ = false;
};

/// A line diff of `before` and `after` (longest common subsequence): unchanged lines start with
/// two spaces, removed ones with "- ", added ones with "+ ". Empty when the texts are equal.
std::string line_diff(const std::string& before, const std::string& after);

}  // namespace shardscope::gui
