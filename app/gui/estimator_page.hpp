#pragma once
// The Estimator page: "will it fit, and on what?" before any GPU is rented. The fields mirror the
// flags of `shardscope estimate`; every change re-runs the estimate (debounced, on a worker
// thread) and refreshes the table, the stacked bar chart and the recommendation.

#include <QFutureWatcher>
#include <QWidget>

#include "app/gui/estimator_model.hpp"

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

  /// Fills the fields from `inputs` (the estimate follows, debounced).
  void setInputs(const EstimatorInputs& inputs);
  /// The inputs the fields hold; throws estimator::EstimatorError for text that is not a count.
  EstimatorInputs inputs() const;
  /// The last finished estimate.
  const EstimatorView& view() const { return view_; }
  EstimatorTableModel* tableModel() const { return table_model_; }
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
  QWidget* buildInputs();
  QWidget* buildModelInputs();
  QWidget* buildShapeInputs();
  QWidget* buildResults();
  QLineEdit* pathField(const QString& tooltip, const QString& filter, QWidget** row);
  void scheduleEstimate();
  void startEstimate();
  void onEstimateFinished();
  void showView();

  QComboBox* model_kind_ = nullptr;
  QStackedWidget* model_stack_ = nullptr;
  QLineEdit* params_ = nullptr;
  QLineEdit* largest_layer_ = nullptr;
  QComboBox* layout_ = nullptr;
  QSpinBox* layers_ = nullptr;
  QSpinBox* hidden_ = nullptr;
  QSpinBox* heads_ = nullptr;
  QSpinBox* kv_heads_ = nullptr;
  QSpinBox* ffn_ = nullptr;
  QSpinBox* vocab_ = nullptr;
  QLineEdit* hf_config_ = nullptr;
  QLineEdit* safetensors_ = nullptr;
  QLineEdit* safetensors_config_ = nullptr;
  QSpinBox* gpus_per_node_ = nullptr;
  QSpinBox* nodes_ = nullptr;
  QComboBox* gpu_ = nullptr;
  QDoubleSpinBox* gpu_memory_ = nullptr;
  QDoubleSpinBox* cpu_memory_ = nullptr;
  QSpinBox* micro_batch_ = nullptr;
  QSpinBox* seq_len_ = nullptr;
  QLineEdit* deepspeed_config_ = nullptr;
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
