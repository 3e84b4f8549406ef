// The Estimator page against `shardscope estimate`: the same request gives the same table (the
// library's numbers), the same defaults (Llama-2-7B's 4096 tokens, not 2048) and the same verdict
// as the CLI run with the page's own command line; the chart's line is the usable memory; every
// bar has its label; comm time reads as the CLI prints it; all columns show at the default size.
#include <algorithm>

#include <QFontMetrics>
#include <QHeaderView>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <qcustomplot.h>

#include <nlohmann/json.hpp>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/estimator/estimator_model.hpp"
#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/estimator/estimator_table_model.hpp"
#include "app/gui/main_window.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate_report.hpp"
#include "estimator/gpu_catalog.hpp"
#include "estimator/hf_config.hpp"
#include "tests/app/cli_process.hpp"

using namespace shardscope::gui;
namespace est = shardscope::estimator;

namespace {

const std::string kSource = SHARDSCOPE_SOURCE_DIR;
const std::string kLlama = kSource + "/tests/estimator/data/hf/llama-2-7b.json";

est::EstimateRequest llama_on_8_h100() {
  est::EstimateRequest r;
  r.source = est::ModelSource::kHfConfig;
  r.hf_config = kLlama;
  r.gpus_per_node = 8;
  r.gpu = "H100-80GB";
  return r;
}

std::string plan_key(const est::ZeroPlan& p) {
  return std::to_string(p.stage) + "/" + est::offload_name(p.offload_optimizer) + "/" + est::offload_name(p.offload_param);
}

std::string plan_key(const nlohmann::json& j) {
  return std::to_string(j.at("stage").get<int>()) + "/" + j.at("offload_optimizer").get<std::string>() + "/" +
         j.at("offload_param").get<std::string>();
}

}  // namespace

class EstimatorPageTest : public QObject {
  Q_OBJECT

  static void waitForEstimate(EstimatorPage& page) {
    QSignalSpy updated(&page, &EstimatorPage::estimateUpdated);
    QVERIFY(updated.wait(10000));
    while (updated.wait(400)) {  // setRequest may queue several estimates: take the last
    }
  }

 private slots:
  void tableEqualsLibraryForParamCount() {
    EstimatorPage page;
    est::EstimateRequest r;
    r.params = 13e9;
    r.largest_layer = 5e8;
    r.gpus_per_node = 4;
    r.nodes = 2;
    r.gpu = "A100-80GB";
    r.cpu_memory_bytes = 512 * est::kGiB;
    r.micro_batch = 2;
    r.seq_len = 4096;
    page.setRequest(r);
    waitForEstimate(page);
    QCOMPARE(page.request().gpus_per_node, r.gpus_per_node);  // the fields hold what was set
    QCOMPARE(page.request().cpu_memory_bytes, r.cpu_memory_bytes);
    est::EstimateOptions o;  // the reference: the library called directly, as the CLI does
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
    for (int row = 0; row < model->rowCount(); ++row) {
      const est::PlanEstimate& p = ref.plans[static_cast<std::size_t>(row)];
      auto cell = [&](int c) { return model->data(model->index(row, c), Qt::UserRole).toDouble(); };
      QCOMPARE(model->data(model->index(row, 0), Qt::UserRole).toString().toStdString(), est::plan_name(p.plan));
      QCOMPARE(cell(EstimatorTableModel::kParams), p.states.gpu.params.bytes);
      QCOMPARE(cell(EstimatorTableModel::kOptimizer), p.states.gpu.master_params.bytes + p.states.gpu.optimizer_states.bytes);
      QCOMPARE(cell(EstimatorTableModel::kGpuTotal), p.gpu_total_bytes);
      QCOMPARE(cell(EstimatorTableModel::kCpuPerNode), p.cpu_total_bytes_per_node);
      QCOMPARE(cell(EstimatorTableModel::kCommPerStep), p.communication.bytes_per_gpu);
      // Comm time and fit read as the CLI's table prints them ("52.4 ms", not "0.05 s").
      QCOMPARE(model->index(row, EstimatorTableModel::kCommTime).data().toString().toStdString(),
               est::format_seconds(p.communication.seconds_per_step));
      QCOMPARE(model->index(row, EstimatorTableModel::kFits).data().toString().toStdString(), est::plan_fit_text(p));
    }
    QCOMPARE(model->index(0, EstimatorTableModel::kCommTime).data().toString(), QString("?"));  // no inter-node bandwidth
    // Stage 0 mixed-precision Adam keeps 16 B/param per GPU (an independent check of one number).
    QCOMPARE(model->data(model->index(0, EstimatorTableModel::kParams), Qt::UserRole).toDouble() +
                 model->data(model->index(0, EstimatorTableModel::kGradients), Qt::UserRole).toDouble() +
                 model->data(model->index(0, EstimatorTableModel::kOptimizer), Qt::UserRole).toDouble(),
             16 * 13e9);
    QCOMPARE(page.view().recommendation.substr(0, ref.verdict.summary.size()), ref.verdict.summary);
  }

  void defaultsAreTheClisDefaults() {
    // A fresh page is an empty request: every field at "auto" means a flag left out.
    EstimatorPage page;
    est::EstimateRequest fresh = page.request();
    QVERIFY(!fresh.gpus_per_node && !fresh.nodes && !fresh.seq_len && !fresh.micro_batch && !fresh.margin);
    QVERIFY(fresh.gpu.empty() && !fresh.gpu_memory_bytes && !fresh.precision && !fresh.optimizer && !fresh.stage);
    // The case: Llama-2-7B on 8 H100 with no sequence length takes max_position_embeddings.
    page.setRequest(llama_on_8_h100());
    waitForEstimate(page);
    QVERIFY2(page.view().error.empty(), page.view().error.c_str());
    QCOMPARE(page.view().estimate->activations.seq_len, 4096LL);
    QVERIFY(page.cliCommand().contains("--hf-config"));
    QVERIFY(!page.cliCommand().contains("--seq-len"));
    // One node: the comm time at NVLink's bandwidth, in the CLI's words ("52.4 ms", not "0.05 s").
    const QString comm = page.tableModel()->index(0, EstimatorTableModel::kCommTime).data().toString();
    QVERIFY2(comm.endsWith(" ms") && comm.contains('.'), qPrintable(comm));
  }

  void sameInputsGiveTheClisVerdict() {
    // Each request on the page and through `shardscope estimate <the page's flags> --json`.
    std::vector<est::EstimateRequest> requests;
    requests.push_back(llama_on_8_h100());
    est::EstimateRequest offload;
    offload.params = 13e9;
    offload.gpus_per_node = 4;
    offload.gpu = "A100-40GB";
    offload.config = kSource + "/configs/templates/zero3_cpu_offload.json";
    offload.cpu_memory_bytes = 256 * est::kGiB;
    offload.margin = 0.2;
    requests.push_back(offload);
    est::EstimateRequest shape;
    shape.source = est::ModelSource::kShape;
    shape.layout = est::TransformerLayout::kGpt2;
    shape.layers = 48;
    shape.hidden = 6144;
    shape.heads = 48;
    shape.vocab = 50304;
    shape.seq_len = 8192;
    shape.micro_batch = 4;
    shape.grad_accum = 8;
    shape.nodes = 2;
    shape.gpus_per_node = 8;
    shape.gpu_memory_bytes = 96 * est::kGiB;
    shape.precision = est::Precision::kFp16;
    shape.optimizer = "lamb";
    shape.checkpointing = est::ActivationCheckpointing::kSelective;
    shape.attention = est::AttentionKernel::kMaterialized;
    shape.inter_node_bandwidth = 25e9;
    shape.stage = 2;
    requests.push_back(shape);
    EstimatorPage page;
    for (const auto& request : requests) {
      page.setRequest(request);
      waitForEstimate(page);
      const EstimatorView& view = page.view();
      QVERIFY2(view.error.empty(), view.error.c_str());
      std::vector<std::string> args = {"estimate"};
      for (const auto& a : est::estimate_request_arguments(page.request())) args.push_back(a);
      // The page's CLI twin is exactly this command.
      QCOMPARE(page.cliCommand().toStdString(), shell_command("shardscope", args));
      args.push_back("--json");
      const auto result = shardscope::testing::run_cli(args);
      QVERIFY2(result.exit_code == (view.failed ? 1 : 0), (result.err + result.out.substr(0, 400)).c_str());
      const auto json = nlohmann::json::parse(result.out);
      const auto& verdict = json.at("verdict");
      QCOMPARE(verdict.at("recommended").is_null(), !view.estimate->verdict.recommended.has_value());
      if (view.estimate->verdict.recommended)
        QCOMPARE(plan_key(verdict.at("recommended")), plan_key(*view.estimate->verdict.recommended));
      QCOMPARE(verdict.at("summary").get<std::string>(), view.estimate->verdict.summary);
      QCOMPARE(json.at("plans").size(), view.rows.size());
      for (std::size_t i = 0; i < view.rows.size(); ++i) {
        QCOMPARE(plan_key(json.at("plans")[i]), plan_key(view.rows[i].zero_plan));
        QCOMPARE(json.at("plans")[i].at("gpu_total_bytes").get<double>(), view.rows[i].gpu_total);
        QCOMPARE(json.at("plans")[i].at("fits").is_null() ? std::optional<bool>() : std::optional<bool>(json.at("plans")[i].at("fits").get<bool>()),
                 view.rows[i].fits);
      }
    }
  }

  // A parameter count alone has no shape for activations: the CLI's table prints "?", the page
  // printed "0.00" (a number a reader would add up).
  void uncountedActivationsReadAsTheClisQuestionMark() {
    est::EstimateRequest r;
    r.params = 7e9;
    r.gpu = "H100-80GB";
    const EstimatorView view = compute_estimator_view(r);
    QVERIFY2(view.error.empty(), view.error.c_str());
    QVERIFY(view.estimate && !view.estimate->activations.available);
    EstimatorTableModel model;
    model.setView(view);
    QVERIFY(model.rowCount() > 0);
    for (int row = 0; row < model.rowCount(); ++row) {
      const QModelIndex cell = model.index(row, EstimatorTableModel::kActivations);
      QCOMPARE(cell.data().toString(), QString("?"));
      QVERIFY(cell.data(Qt::ToolTipRole).toString().startsWith("activations not counted: "));
    }
    const std::string text = est::format_estimate_text(*view.estimate, false);  // the CLI's table, for the same request
    QVERIFY2(text.find("?") != std::string::npos, text.c_str());
  }

  void requestedPlanIsMarked() {
    est::EstimateRequest r;
    r.params = 7e9;
    r.gpu = "H100-80GB";
    r.config = kSource + "/configs/templates/zero3_cpu_offload.json";
    const EstimatorView view = compute_estimator_view(r);
    QVERIFY2(view.error.empty(), view.error.c_str());
    EstimatorTableModel model;
    model.setView(view);
    int requested = 0;
    for (int row = 0; row < model.rowCount(); ++row) {
      const bool marked = model.index(row, EstimatorTableModel::kPlan).data().toString().contains(kRequestedMark);
      QCOMPARE(marked, view.rows[static_cast<std::size_t>(row)].requested);
      if (marked) {
        ++requested;
        QCOMPARE(view.rows[static_cast<std::size_t>(row)].zero_plan.stage, 3);
        QVERIFY(model.index(row, 0).data(Qt::FontRole).value<QFont>().italic());
      }
    }
    QCOMPARE(requested, 1);
  }

  void chartLineIsTheUsableMemoryAndEveryBarHasItsLabel() {
    MainWindow window;
    window.resize(1200, 800);  // the default size on any screen of 1280 x 900 or more
    window.show();
    window.showPage("Estimator");
    auto* page = window.findChild<EstimatorPage*>();
    est::EstimateRequest r = llama_on_8_h100();
    r.margin = 0.1;
    page->setRequest(r);
    waitForEstimate(*page);
    QCustomPlot* plot = page->chart();
    // The red line is what fit is judged against: the H100's memory less the 10 % margin.
    const double usable = *page->view().usable_gpu_bytes / est::kGiB;
    QCOMPARE(usable, 0.9 * est::require_gpu("H100-80GB", "t").memory_bytes / est::kGiB);
    bool found_usable = false;
    for (int i = 0; i < plot->itemCount(); ++i)
      if (auto* line = qobject_cast<QCPItemStraightLine*>(plot->item(i)); line && line->pen().color() == Qt::red)
        found_usable = std::abs(line->point1->coords().y() - usable) < 1e-9;
    QVERIFY(found_usable);
    // The plans that fit are those whose device-level bound (the + over each bar) is under the line.
    for (const auto& row : page->view().rows) {
      QCOMPARE(row.fits.value_or(false), row.gpu_device_upper / est::kGiB <= usable + 1e-9);
      QVERIFY(row.gpu_device_upper > row.gpu_total);
      QVERIFY(std::abs(row.gpu_resident + row.gpu_peak_activations + row.gpu_buffers + row.gpu_workspace - row.gpu_total) <
              1.0);  // the stacked parts add up to the bar
    }
    // Every tick label lies inside the plot: QCustomPlot skips a label the widget's edge would clip.
    plot->replot();
    auto* ticker = dynamic_cast<QCPAxisTickerText*>(plot->xAxis->ticker().data());
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().size(), static_cast<int>(page->view().rows.size()));
    QVERIFY(page->view().rows.size() >= 10);
    const QFontMetrics metrics(plot->xAxis->tickLabelFont());
    double previous_right = -1;
    for (auto it = ticker->ticks().begin(); it != ticker->ticks().end(); ++it) {
      const double x = plot->xAxis->coordToPixel(it.key());
      const int half = metrics.boundingRect(QRect(0, 0, 1000, 100), Qt::AlignCenter, it.value()).width() / 2;
      QVERIFY2(x - half >= 0 && x + half <= plot->width(), qPrintable(it.value()));
      QVERIFY2(x - half > previous_right, qPrintable(it.value() + " runs into its left neighbour"));
      previous_right = x + half;
    }
    // At the default window size every column of the table is visible without scrolling.
    QTableView* table = page->tableView();
    QCOMPARE(window.width(), 1200);
    qInfo("the table needs %d px and has %d", table->horizontalHeader()->length(), table->viewport()->width());
    QCOMPARE(table->horizontalScrollBar()->maximum(), 0);
    QVERIFY(table->horizontalHeader()->length() <= table->viewport()->width());
  }

  void droppedFilesLandInTheRightField() {
    EstimatorPage page;
    const QString source = SHARDSCOPE_SOURCE_DIR;
    QVERIFY(page.loadFile(source + "/tests/estimator/data/hf/gpt2.json"));  // has model_type
    QVERIFY(page.request().source == est::ModelSource::kHfConfig);
    QVERIFY(page.request().hf_config.find("gpt2.json") != std::string::npos);
    QVERIFY(page.loadFile(source + "/configs/templates/zero2_bf16.json"));  // a DeepSpeed config
    QVERIFY(page.request().config.find("zero2_bf16.json") != std::string::npos);
    QVERIFY(!page.loadFile(source + "/no/such/file.json"));
    waitForEstimate(page);
    QVERIFY2(page.view().error.empty(), page.view().error.c_str());
    QVERIFY(std::any_of(page.view().rows.begin(), page.view().rows.end(), [](const EstimatorRow& r) { return r.requested; }));
  }

  void badInputShowsMessage() {
    EstimatorPage page;
    est::EstimateRequest r;
    r.source = est::ModelSource::kHfConfig;
    r.hf_config = "/nonexistent/config.json";
    page.setRequest(r);
    waitForEstimate(page);
    QCOMPARE(page.tableModel()->rowCount(), 0);
    QVERIFY(page.view().error.find("/nonexistent/config.json") != std::string::npos);
  }
};

QTEST_MAIN(EstimatorPageTest)
#include "estimator_page_test.moc"
