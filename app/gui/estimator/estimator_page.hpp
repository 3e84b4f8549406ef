#pragma once
// The Estimator page: "will it fit, and on what?" before any GPU is rented. The fields are the
// flags of `shardscope estimate`, each "auto" until set, so a field left alone means what the
// flag left out means (the DeepSpeed config's value, else EstimateOptions' default); every change
// re-runs the estimate (debounced, on a worker thread) and refreshes the table, the stacked bar
// chart, the recommendation and the equivalent command line.

#include <QFutureWatcher>
#include <QWidget>

#include "app/gui/estimator/estimator_model.hpp"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QStackedWidget;
class QTableView;
class QTimer;

namespace shardscope::gui {

class EstimatorTableModel;

class EstimatorPage : public QWidget {
  Q_OBJECT

 public:
  explicit EstimatorPage(QWidget* parent = nullptr);
  ~EstimatorPage() override;

  /// Fills the fields from `request` (unset fields show "auto"); the estimate follows, debounced.
  void setRequest(const estimator::EstimateRequest& request);
  /// The request the fields hold; throws estimator::EstimatorError for text that is not a count.
  estimator::EstimateRequest request() const;
  /// The last finished estimate.
  const EstimatorView& view() const { return view_; }
  EstimatorTableModel* tableModel() const { return table_model_; }
  QTableView* tableView() const { return table_; }
  QCustomPlot* chart() const { return plot_; }
  /// The command line shown under the results (the page's CLI twin).
  QString cliCommand() const;
  /// The estimate as `shardscope estimate` prints it.
  QString reportText() const;

 public slots:
  void copyAsText();
  void exportCsv();
  void exportPng();
  /// Loads a dropped or chosen file into the matching field (config.json, safetensors, DeepSpeed config).
  bool loadFile(const QString& path);

 signals:
  void estimateUpdated();
  void statusMessage(const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  // estimator_page_inputs.cpp: the fields, and the request they hold.
  QWidget* buildInputs();
  QWidget* buildModelInputs();
  QWidget* buildShapeInputs();
  QWidget* buildClusterInputs();
  QWidget* buildTrainingInputs();
  QWidget* buildAdvancedInputs();
  QLineEdit* pathField(const QString& tooltip, const QString& filter, QWidget** row);
  void readModelFields(estimator::EstimateRequest& r) const;
  void readOtherFields(estimator::EstimateRequest& r) const;
  void showEffectiveDefaults();
  // estimator_page.cpp: the results.
  QWidget* buildResults();
  void scheduleEstimate();
  void startEstimate();
  void onEstimateFinished();
  void showView();

  QComboBox* model_kind_ = nullptr;
  QStackedWidget* model_stack_ = nullptr;
  QLineEdit* params_ = nullptr;
  QLineEdit* largest_layer_ = nullptr;
  QComboBox* layout_ = nullptr;
  QSpinBox *layers_ = nullptr, *hidden_ = nullptr, *heads_ = nullptr, *kv_heads_ = nullptr, *head_dim_ = nullptr,
           *ffn_ = nullptr, *vocab_ = nullptr;
  QComboBox* tied_ = nullptr;
  QLineEdit* hf_config_ = nullptr;
  QComboBox* hf_layout_ = nullptr;
  QLineEdit* safetensors_ = nullptr;
  QLineEdit* safetensors_config_ = nullptr;
  QSpinBox* gpus_per_node_ = nullptr;
  QSpinBox* nodes_ = nullptr;
  QComboBox* gpu_ = nullptr;
  QDoubleSpinBox* gpu_memory_ = nullptr;
  QDoubleSpinBox* cpu_memory_ = nullptr;
  QDoubleSpinBox* margin_ = nullptr;
  QDoubleSpinBox* bandwidth_ = nullptr;
  QDoubleSpinBox* inter_node_bandwidth_ = nullptr;
  QLineEdit* deepspeed_config_ = nullptr;
  QComboBox* stage_ = nullptr;
  QComboBox* offload_optimizer_ = nullptr;
  QComboBox* offload_param_ = nullptr;
  QComboBox* precision_ = nullptr;
  QComboBox* optimizer_ = nullptr;
  QCheckBox* low_precision_master_ = nullptr;
  QCheckBox* low_precision_states_ = nullptr;
  QSpinBox* micro_batch_ = nullptr;
  QSpinBox* seq_len_ = nullptr;
  QSpinBox* grad_accum_ = nullptr;
  QComboBox* checkpointing_ = nullptr;
  QCheckBox* materialized_scores_ = nullptr;
  QLineEdit *reduce_bucket_ = nullptr, *allgather_bucket_ = nullptr, *prefetch_bucket_ = nullptr,
            *max_live_ = nullptr;
  QDoubleSpinBox* buffer_factor_ = nullptr;
  QComboBox* units_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* recommendation_ = nullptr;
  QLabel* cli_command_ = nullptr;
  QTableView* table_ = nullptr;
  EstimatorTableModel* table_model_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QTimer* debounce_ = nullptr;
  QFutureWatcher<EstimatorView>* watcher_ = nullptr;
  bool pending_ = false;  ///< inputs changed while a computation ran
  EstimatorView view_;
};

}  // namespace shardscope::gui
