#include "app/gui/estimator/estimator_table_model.hpp"

#include <cmath>
#include <limits>

#include <QBrush>
#include <QColor>
#include <QFont>

#include "estimator/byte_units.hpp"

namespace shardscope::gui {

EstimatorTableModel::EstimatorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void EstimatorTableModel::setView(const EstimatorView& view) {
  beginResetModel();
  rows_ = view.rows;
  unit_ = view.estimate ? view.estimate->options.display_unit : estimator::ByteUnit::kGiB;
  endResetModel();
  emit headerDataChanged(Qt::Horizontal, 0, kColumnCount - 1);
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
    if (column == kPlan)
      return QString::fromStdString(row.short_label) + (row.recommended ? QString(" ") + kRecommendedMark : QString()) +
             (row.requested ? QString(" ") + kRequestedMark : QString());
    if (column == kFits) return QString::fromStdString(row.fit_text);
    if (column == kCommTime) return QString::fromStdString(row.comm_time_text);
    // Not counted is not zero: "?" as the CLI's table prints it (the reason is the tooltip).
    if (column == kActivations && !row.activations_unknown.empty()) return QStringLiteral("?");
    const double value = columnValue(row, column);
    if (std::isnan(value)) return tr("n/a");
    return QString::number(estimator::bytes_in(value, unit_), 'f', 2);
  }
  if (role == Qt::ToolTipRole && column == kPlan)
    return QString::fromStdString(row.plan) + (row.recommended ? tr("\nrecommended: the lowest plan that fits") : QString()) +
           (row.requested ? tr("\nrequested by the DeepSpeed config or --stage") : QString());
  if (role == Qt::UserRole) {
    if (column == kPlan) return QString::fromStdString(row.plan);
    if (column == kFits) return row.fits ? QVariant(*row.fits) : QVariant();
    return columnValue(row, column);
  }
  if (role == Qt::TextAlignmentRole && column != kPlan) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::FontRole && (row.recommended || row.requested)) {
    QFont font;
    font.setBold(row.recommended);
    font.setItalic(row.requested);
    return font;
  }
  if (role == Qt::ForegroundRole && column == kFits && row.fits)
    return QBrush(*row.fits ? QColor(0, 128, 0) : QColor(192, 0, 0));
  if (role == Qt::ToolTipRole && column == kActivations && !row.activations_unknown.empty())
    return tr("activations not counted: %1").arg(QString::fromStdString(row.activations_unknown));
  if (role == Qt::ToolTipRole && column == kOptimizer)
    return tr("fp32 master weights plus optimizer states (e.g. Adam's momentum and variance)");
  return {};
}

QVariant EstimatorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  static const char* const kNames[] = {"Plan", "Params", "Grads", "Optim.", "Activ.", "Buffers", "GPU",
                                       "CPU", "NVMe", "Comm", "Comm", "Fits"};
  static const char* const kPer[] = {"", "", "", "", "", "", "", "/node", "/node", "/step", "", ""};
  static const char* const kTips[] = {
      "ZeRO stage and offload devices (zero_optimization.stage, offload_optimizer.device, offload_param.device)",
      "16-bit parameters held on each GPU", "gradients held on each GPU",
      "fp32 master weights + optimizer states on each GPU",
      "activations per GPU at the micro-batch and sequence length (ZeRO does not shard them)",
      "reduce / all-gather / prefetch buckets (reduce_bucket_size, allgather_bucket_size, ...)",
      "everything on one GPU", "host memory per node (offloaded states, pinned buffers)",
      "NVMe per node (ZeRO-Infinity)", "bytes each GPU sends per optimizer step",
      "communication time per step at the link bandwidth", "fits GPU (and CPU) memory with the margin"};
  if (section < 0 || section >= kColumnCount) return {};
  if (role == Qt::DisplayRole) {
    // Three lines, the name, the unit and what it is per, so twelve columns fit beside the inputs.
    // Sizes are per GPU (the two /node columns aside); comm is per step.
    const bool sized = section != kPlan && section != kCommTime && section != kFits;
    const QString unit = sized ? QString(estimator::unit_name(unit_)) : section == kCommTime ? tr("time") : QString();
    return tr(kNames[section]) + "\n" + unit + "\n" + kPer[section];
  }
  if (role == Qt::ToolTipRole) return tr(kTips[section]);
  return {};
}

}  // namespace shardscope::gui
