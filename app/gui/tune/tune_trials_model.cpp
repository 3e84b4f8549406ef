#include "app/gui/tune/tune_trials_model.hpp"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace shardscope::gui {

QColor trial_mark_color(TrialMark mark) {
  switch (mark) {
    case TrialMark::kOk: return QColor(31, 119, 180);
    case TrialMark::kPruned: return QColor(128, 128, 128);
    case TrialMark::kOutOfMemory: return QColor(214, 39, 40);
    case TrialMark::kFailed: return QColor(140, 40, 40);
    case TrialMark::kRunning: return QColor(44, 160, 44);
    case TrialMark::kSkipped: return QColor(170, 170, 170);
  }
  return Qt::black;
}

TuneTrialsModel::TuneTrialsModel(QObject* parent) : QAbstractTableModel(parent) {}

void TuneTrialsModel::setRows(std::vector<TrialRow> rows, const QString& metric_header) {
  // Rows only grow while a run goes on: the old ones are updated in place and new ones inserted,
  // so the view keeps its selection (a user picking two trials to compare while trials arrive).
  const int old_count = rowCount();
  if (rows.size() < rows_.size() || metric_header != metric_header_) {
    beginResetModel();
    rows_ = std::move(rows);
    metric_header_ = metric_header;
    endResetModel();
    emit headerDataChanged(Qt::Horizontal, 0, kColumnCount - 1);
    return;
  }
  std::vector<TrialRow> added(rows.begin() + old_count, rows.end());
  rows.resize(static_cast<std::size_t>(old_count));
  rows_ = std::move(rows);
  if (old_count > 0) emit dataChanged(index(0, 0), index(old_count - 1, kColumnCount - 1));
  if (added.empty()) return;
  beginInsertRows({}, old_count, old_count + static_cast<int>(added.size()) - 1);
  rows_.insert(rows_.end(), added.begin(), added.end());
  endInsertRows();
}

int TuneTrialsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int TuneTrialsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant TuneTrialsModel::display(const TrialRow& r, int column) const {
  switch (column) {
    case kTrial: return r.best ? QString("\u2605 %1").arg(r.trial) : QString::number(r.trial);
    case kParameters: return QString::fromStdString(r.name);
    case kPredicted: return QString::fromStdString(trial_bytes_text(r.predicted_bytes));
    case kPeak: return QString::fromStdString(trial_bytes_text(r.peak_bytes));
    case kMetric: return r.metric ? QString::number(*r.metric, 'f', 2) : QStringLiteral("-");
    case kStatus: return QString::fromStdString(r.status);
    case kNote: return QString::fromStdString(r.message).section('\n', 0, 0);
  }
  return {};
}

QVariant TuneTrialsModel::sortValue(const TrialRow& r, int column) const {
  switch (column) {
    case kTrial: return static_cast<qlonglong>(r.trial);
    case kPredicted: return r.predicted_bytes ? QVariant(*r.predicted_bytes) : QVariant();
    case kPeak: return r.peak_bytes ? QVariant(*r.peak_bytes) : QVariant();
    case kMetric: return r.metric ? QVariant(*r.metric) : QVariant();
    default: return display(r, column);
  }
}

QVariant TuneTrialsModel::toolTip(const TrialRow& r, int column) const {
  if (column == kParameters) return QString::fromStdString(r.params);
  if (column == kNote || column == kStatus) return r.message.empty() ? QVariant() : QString::fromStdString(r.message);
  if (column == kTrial && !r.session_uid.empty()) return tr("session %1").arg(QString::fromStdString(r.session_uid));
  if (column == kTrial && r.best) return tr("the best trial: the tune report's pick");
  return {};
}

QVariant TuneTrialsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const TrialRow& r = rows_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return display(r, index.column());
    case kSortRole: return sortValue(r, index.column());
    case Qt::ToolTipRole: return toolTip(r, index.column());
    case Qt::TextAlignmentRole:
      return index.column() == kParameters || index.column() == kNote || index.column() == kStatus
                 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      return r.mark == TrialMark::kOk && index.column() != kStatus ? QVariant() : QBrush(trial_mark_color(r.mark));
    case Qt::BackgroundRole: return r.best ? QBrush(QColor(255, 243, 191)) : QVariant();
    case Qt::FontRole: {
      if (!r.best && r.mark != TrialMark::kRunning) return {};
      QFont font;
      font.setBold(r.best);
      font.setItalic(r.mark == TrialMark::kRunning);
      return font;
    }
  }
  return {};
}

QVariant TuneTrialsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case kTrial: return tr("Trial");
    case kParameters: return tr("Parameters");
    case kPredicted: return tr("Predicted / rank");
    case kPeak: return tr("Measured peak");
    case kMetric: return metric_header_;
    case kStatus: return tr("Status");
    case kNote: return tr("Note");
  }
  return {};
}

}  // namespace shardscope::gui
