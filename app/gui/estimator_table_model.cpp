#include "app/gui/estimator_table_model.hpp"

#include <cmath>
#include <limits>

#include <QBrush>
#include <QColor>
#include <QFont>

#include "estimator/byte_units.hpp"

namespace shardscope::gui {

EstimatorTableModel::EstimatorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void EstimatorTableModel::setRows(std::vector<EstimatorRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int EstimatorTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int EstimatorTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

double EstimatorTableModel::columnValue(const EstimatorRow& row, int column) {
  switch (column) {
    case kParams: return row.gpu_params;
    case kGradients: return row.gpu_gradients;
    case kOptimizer: return row.gpu_optimizer;
    case kActivations: return row.gpu_activations;
    case kBuffers: return row.gpu_buffers;
    case kGpuTotal: return row.gpu_total;
    case kCpuPerNode: return row.cpu_per_node;
    case kNvmePerNode: return row.nvme_per_node;
    case kCommPerStep: return row.comm_bytes_per_gpu;
    case kCommTime: return row.comm_seconds.value_or(std::numeric_limits<double>::quiet_NaN());
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

QVariant EstimatorTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const EstimatorRow& row = rows_[static_cast<std::size_t>(index.row())];
  const int column = index.column();
  if (role == Qt::DisplayRole) {
    if (column == kPlan) return QString::fromStdString(row.plan) + (row.recommended ? tr("  (recommended)") : "");
    if (column == kFits) return row.fits ? (*row.fits ? tr("yes") : tr("no")) : tr("n/a");
    const double value = columnValue(row, column);
    if (std::isnan(value)) return tr("n/a");
    if (column == kCommTime) return QString::number(value, 'f', 2) + " s";
    return QString::fromStdString(estimator::format_bytes(value, estimator::ByteUnit::kGiB));
  }
  if (role == Qt::UserRole) {
    if (column == kPlan) return QString::fromStdString(row.plan);
    if (column == kFits) return row.fits ? QVariant(*row.fits) : QVariant();
    return columnValue(row, column);
  }
  if (role == Qt::TextAlignmentRole && column != kPlan) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::FontRole && row.recommended) {
    QFont bold;
    bold.setBold(true);
    return bold;
  }
  if (role == Qt::ForegroundRole && column == kFits && row.fits)
    return QBrush(*row.fits ? QColor(0, 128, 0) : QColor(192, 0, 0));
  if (role == Qt::ToolTipRole && column == kOptimizer)
    return tr("fp32 master weights plus optimizer states (e.g. Adam's momentum and variance)");
  return {};
}

QVariant EstimatorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  static const char* const kNames[] = {"Plan", "Params /GPU", "Gradients /GPU", "Optimizer /GPU",
                                       "Activations /GPU", "Buffers /GPU", "GPU total", "CPU /node",
                                       "NVMe /node", "Comm /step /GPU", "Comm time", "Fits"};
  static const char* const kTips[] = {
      "ZeRO stage and offload devices (zero_optimization.stage, offload_optimizer.device, offload_param.device)",
      "16-bit parameters held on each GPU", "gradients held on each GPU",
      "fp32 master weights + optimizer states on each GPU",
      "activations per GPU at the micro-batch and sequence length (ZeRO does not shard them)",
      "reduce / all-gather / prefetch buckets (reduce_bucket_size, allgather_bucket_size, ...)",
      "everything on one GPU", "host memory per node (offloaded states, pinned buffers)",
      "NVMe per node (ZeRO-Infinity)", "bytes each GPU sends per optimizer step",
      "communication time per step at the link bandwidth", "fits GPU (and CPU) memory with the 10% margin"};
  if (section < 0 || section >= kColumnCount) return {};
  if (role == Qt::DisplayRole) return tr(kNames[section]);
  if (role == Qt::ToolTipRole) return tr(kTips[section]);
  return {};
}

}  // namespace shardscope::gui
