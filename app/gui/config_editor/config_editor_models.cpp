#include "app/gui/config_editor/config_editor_models.hpp"

#include <QBrush>
#include <QColor>
#include <sstream>

namespace shardscope::gui {

using configs::Severity;

void DiagnosticsModel::setDiagnostics(std::vector<configs::Diagnostic> diagnostics) {
  beginResetModel();
  diagnostics_ = std::move(diagnostics);
  endResetModel();
}

int DiagnosticsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(diagnostics_.size());
}

int DiagnosticsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant DiagnosticsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const configs::Diagnostic& d = diagnostic(index.row());
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case kSeverity: return QString(configs::to_string(d.severity));
      case kLine: return d.location.line > 0 ? QVariant(d.location.line) : QVariant(QString("-"));
      case kMessage: return QString::fromStdString(d.message);
      case kHint: return QString::fromStdString(d.hint);
      case kCode: return QString::fromStdString(d.code);
      default: return {};
    }
  }
  if (role == Qt::ForegroundRole && index.column() == kSeverity)
    return QBrush(d.severity == Severity::kError     ? QColor(200, 0, 0)
                  : d.severity == Severity::kWarning ? QColor(200, 110, 0)
                                                     : QColor(0, 90, 160));
  if (role == Qt::UserRole) return d.location.line;
  return {};
}

QVariant DiagnosticsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"Severity", "Line", "Message", "Hint", "Code"};
  return section >= 0 && section < kColumnCount ? tr(kNames[section]) : QVariant();
}

void ResolvedModel::setResolved(std::vector<configs::ResolvedValue> resolved) {
  all_ = std::move(resolved);
  refilter();
}

void ResolvedModel::setOnlyNonDefault(bool only) {
  only_non_default_ = only;
  refilter();
}

void ResolvedModel::refilter() {
  beginResetModel();
  shown_.clear();
  for (const auto& value : all_)
    if (!only_non_default_ || value.source != configs::ValueSource::kDefault) shown_.push_back(value);
  endResetModel();
}

int ResolvedModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(shown_.size());
}

int ResolvedModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant ResolvedModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const configs::ResolvedValue& v = shown_[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case kPath: return QString::fromStdString(v.path);
      case kValue: return QString::fromStdString(v.value_json);
      case kSource:
        return v.location.line > 0 ? QString("%1 (line %2)").arg(configs::to_string(v.source)).arg(v.location.line)
                                   : QString(configs::to_string(v.source));
      case kNote: return QString::fromStdString(v.note);
      default: return {};
    }
  }
  if (role == Qt::ForegroundRole && v.source == configs::ValueSource::kDefault) return QBrush(QColor(120, 120, 120));
  if (role == Qt::UserRole) return v.location.line;
  return {};
}

QVariant ResolvedModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"Key", "Effective value", "Source", "Note"};
  return section >= 0 && section < kColumnCount ? tr(kNames[section]) : QVariant();
}

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::string line_diff(const std::string& before, const std::string& after) {
  if (before == after) return {};
  const auto a = split_lines(before), b = split_lines(after);
  const std::size_t n = a.size(), m = b.size();
  // LCS table; configs are hundreds of lines, so n x m stays small.
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::string out;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      out += "  " + a[i++] + "\n";
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out += "- " + a[i++] + "\n";  // removals before additions, as diff -u prints them
    } else {
      out += "+ " + b[j++] + "\n";
    }
  }
  return out;
}

}  // namespace shardscope::gui
