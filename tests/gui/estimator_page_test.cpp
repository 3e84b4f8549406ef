// The Estimator page without pixels: for given inputs its table holds exactly the numbers the
// estimator library computes (the same calls `shardscope estimate` makes), and bad inputs show a
// message instead of rows.
#include <algorithm>

#include <QSignalSpy>
#include <QTest>

#include "app/gui/estimator_model.hpp"
#include "app/gui/estimator_page.hpp"
#include "app/gui/estimator_table_model.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate.hpp"
#include "estimator/gpu_catalog.hpp"
#include "estimator/hf_config.hpp"

using namespace shardscope::gui;
namespace est = shardscope::estimator;

class EstimatorPageTest : public QObject {
  Q_OBJECT

  static void waitForEstimate(EstimatorPage& page) {
    QSignalSpy updated(&page, &EstimatorPage::estimateUpdated);
    QVERIFY(updated.wait(10000));
  }

 private slots:
  void tableEqualsLibraryForParamCount() {
    EstimatorPage page;
    EstimatorInputs in;
    in.params = 13e9;
    in.largest_layer = 5e8;
    in.gpus_per_node = 4;
    in.nodes = 2;
    in.gpu_name = "A100-80GB";
    in.cpu_memory_bytes = 512 * est::kGiB;
    in.micro_batch = 2;
    in.seq_len = 4096;
    page.setInputs(in);
    waitForEstimate(page);
    // The reference: the library called directly, as the CLI does.
    est::EstimateOptions o;
    o.cluster.gpus_per_node = 4;
    o.cluster.nodes = 2;
    o.cluster.gpu_name = "A100-80GB";
    o.cluster.gpu_memory_bytes = est::require_gpu("A100-80GB", "test").memory_bytes;
    o.cluster.cpu_memory_bytes = 512 * est::kGiB;
    o.workload.micro_batch = 2;
    o.workload.seq_len = 4096;
    const est::Estimate ref = est::run_estimate(est::describe_param_count(13e9, 5e8), o);
    EstimatorTableModel* model = page.tableModel();
    QCOMPARE(model->rowCount(), static_cast<int>(ref.plans.size()));
    QVERIFY(model->rowCount() >= 7);
    for (int r = 0; r < model->rowCount(); ++r) {
      const est::PlanEstimate& p = ref.plans[static_cast<std::size_t>(r)];
      auto cell = [&](int c) { return model->data(model->index(r, c), Qt::UserRole).toDouble(); };
      QCOMPARE(model->data(model->index(r, 0), Qt::UserRole).toString().toStdString(), est::plan_name(p.plan));
      QCOMPARE(cell(EstimatorTableModel::kParams), p.states.gpu.params.bytes);
      QCOMPARE(cell(EstimatorTableModel::kGradients), p.states.gpu.gradients.bytes);
      QCOMPARE(cell(EstimatorTableModel::kOptimizer),
               p.states.gpu.master_params.bytes + p.states.gpu.optimizer_states.bytes);
      QCOMPARE(cell(EstimatorTableModel::kBuffers), p.buffers.gpu_bytes);
      QCOMPARE(cell(EstimatorTableModel::kGpuTotal), p.gpu_total_bytes);
      QCOMPARE(cell(EstimatorTableModel::kCpuPerNode), p.cpu_total_bytes_per_node);
      QCOMPARE(cell(EstimatorTableModel::kCommPerStep), p.communication.bytes_per_gpu);
      QCOMPARE(model->data(model->index(r, EstimatorTableModel::kFits), Qt::UserRole).toBool(), p.fits());
    }
    // An independent check of one number: stage 0 mixed-precision Adam keeps 16 B/param per GPU.
    QCOMPARE(model->data(model->index(0, EstimatorTableModel::kParams), Qt::UserRole).toDouble() +
                 model->data(model->index(0, EstimatorTableModel::kGradients), Qt::UserRole).toDouble() +
                 model->data(model->index(0, EstimatorTableModel::kOptimizer), Qt::UserRole).toDouble(),
             16 * 13e9);
    QCOMPARE(page.view().recommendation.substr(0, ref.verdict.summary.size()), ref.verdict.summary);
    QVERIFY(page.reportText().contains("stage 3"));
  }

  void hfConfigGivesActivations() {
    const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/estimator/data/hf/llama-2-7b.json";
    EstimatorInputs in;
    in.model_kind = ModelInputKind::kHfConfig;
    in.hf_config_path = path;
    in.gpus_per_node = 8;
    in.gpu_name = "H100-80GB";
    in.seq_len = 2048;
    const EstimatorView view = compute_estimator_view(in);
    QVERIFY2(view.error.empty(), view.error.c_str());
    est::EstimateOptions o;
    o.cluster.gpus_per_node = 8;
    o.cluster.gpu_name = "H100-80GB";
    o.cluster.gpu_memory_bytes = est::require_gpu("H100-80GB", "test").memory_bytes;
    o.workload.seq_len = 2048;
    est::HfConfigOptions hf;
    hf.seq_len = 2048;
    const est::Estimate ref = est::run_estimate(est::describe_hf_config_file(path, hf), o);
    QVERIFY(ref.activations.available);
    QCOMPARE(view.rows.front().gpu_activations, ref.activations.total_bytes);
    QCOMPARE(view.rows.back().gpu_total, ref.plans.back().gpu_total_bytes);
    // The CSV carries the same bytes, one line per plan plus the header.
    const std::string csv = estimator_rows_csv(view);
    QCOMPARE(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), view.rows.size() + 1);
    QVERIFY(estimator_cli_command(in).find("--hf-config " + path) != std::string::npos);
  }

  void shapeMatchesItsConfigJson() {
    // Llama-2-7B typed in as a shape counts the same parameters as its config.json.
    EstimatorInputs shape;
    shape.model_kind = ModelInputKind::kShape;
    shape.shape = est::default_shape(est::TransformerLayout::kLlama);
    shape.shape.layers = 32;
    shape.shape.hidden = 4096;
    shape.shape.heads = 32;
    shape.shape.ffn = 11008;
    shape.shape.vocab = 32000;
    shape.gpu_name = "H100-80GB";
    EstimatorInputs config = shape;
    config.model_kind = ModelInputKind::kHfConfig;
    config.hf_config_path = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/estimator/data/hf/llama-2-7b.json";
    const EstimatorView a = compute_estimator_view(shape), b = compute_estimator_view(config);
    QVERIFY2(a.error.empty(), a.error.c_str());
    QVERIFY2(b.error.empty(), b.error.c_str());
    QCOMPARE(a.estimate->model.total_params, 6738415616.0);  // Llama-2-7B's published count
    QCOMPARE(a.estimate->model.total_params, b.estimate->model.total_params);
    QCOMPARE(a.rows.front().gpu_activations, b.rows.front().gpu_activations);
  }

  void deepspeedConfigMarksRequestedPlan() {
    EstimatorInputs in;
    in.params = 7e9;
    in.gpu_name = "H100-80GB";
    in.deepspeed_config_path = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/templates/zero3_cpu_offload.json";
    const EstimatorView view = compute_estimator_view(in);
    QVERIFY2(view.error.empty(), view.error.c_str());
    int requested = 0;
    for (const auto& row : view.rows)
      if (row.requested) {
        ++requested;
        QCOMPARE(row.zero_plan.stage, 3);
        QVERIFY(row.zero_plan.offload_param == est::OffloadDevice::kCpu);
      }
    QCOMPARE(requested, 1);
  }

  void droppedFilesLandInTheRightField() {
    EstimatorPage page;
    const QString source = SHARDSCOPE_SOURCE_DIR;
    QVERIFY(page.loadFile(source + "/tests/estimator/data/hf/gpt2.json"));  // has model_type
    QVERIFY(page.inputs().model_kind == ModelInputKind::kHfConfig);
    QVERIFY(page.inputs().hf_config_path.find("gpt2.json") != std::string::npos);
    QVERIFY(page.loadFile(source + "/configs/templates/zero2_bf16.json"));  // a DeepSpeed config
    QVERIFY(page.inputs().deepspeed_config_path.find("zero2_bf16.json") != std::string::npos);
    QVERIFY(page.inputs().model_kind == ModelInputKind::kHfConfig);
    QVERIFY(!page.loadFile(source + "/no/such/file.json"));
    waitForEstimate(page);
    QVERIFY2(page.view().error.empty(), page.view().error.c_str());
    QVERIFY(std::any_of(page.view().rows.begin(), page.view().rows.end(), [](const EstimatorRow& r) { return r.requested; }));
  }

  void badInputShowsMessage() {
    EstimatorPage page;
    EstimatorInputs in;
    in.model_kind = ModelInputKind::kHfConfig;
    in.hf_config_path = "/nonexistent/config.json";
    page.setInputs(in);
    waitForEstimate(page);
    QCOMPARE(page.tableModel()->rowCount(), 0);
    QVERIFY(page.view().error.find("/nonexistent/config.json") != std::string::npos);
  }
};

QTEST_MAIN(EstimatorPageTest)
#include "estimator_page_test.moc"
