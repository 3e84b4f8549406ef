// shardscope-gui-screenshots: renders each page of the workbench with real content (a Llama-2-7B
// config.json on 8 x H100 for the Estimator, a template with two mistakes for the Config Editor)
// and writes docs/screenshots/<page>.png. Runs offscreen: QT_QPA_PLATFORM=offscreen. The Launch &
// Watch and Sessions & Compare shots are of real runs: two 2-rank CPU trainings of a small GPT-2
// started through the Launch page (the `shardscope` CLI comes from $SHARDSCOPE_CLI).
#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include "app/gui/code_editor.hpp"
#include "app/gui/config_editor_page.hpp"
#include "app/gui/estimator_page.hpp"
#include "app/gui/launch_page.hpp"
#include "app/gui/sessions_page.hpp"
#include "sessions/session_reader.hpp"
#include <QFile>
#include <QTemporaryDir>
#include "app/gui/main_window.hpp"
#include "estimator/byte_units.hpp"

using namespace shardscope::gui;
namespace sessions = shardscope::sessions;

namespace {

bool save_page(MainWindow& window, const QString& title, const QString& path) {
  window.showPage(title);
  QApplication::processEvents();
  const bool ok = window.grab().save(path);
  qInfo("%s %s", ok ? "wrote" : "FAILED to write", qPrintable(path));
  return ok;
}

// Runs `spec` through the Launch page and waits for its end; true when it completed.
bool run_launch(LaunchPage* page, const LaunchSpec& spec) {
  page->setUseEditorConfig(false);
  page->setSpec(spec);
  QSignalSpy finished(page, &LaunchPage::runFinished);
  page->start();
  if (!finished.wait(600000) || finished.first().first().toInt() != 0) {
    qWarning("run %s failed: %s", spec.name.c_str(), qPrintable(page->banner()->text()));
    return false;
  }
  QTest::qWait(1500);  // the poller's last reads
  return true;
}

bool write_config(const QString& path, const QByteArray& json) {
  QFile file(path);
  return file.open(QIODevice::WriteOnly) && file.write(json) == json.size();
}

// Two real runs that differ in learning rate and ZeRO stage, then the Launch page showing the
// second and the Sessions page comparing both.
bool shoot_runs(MainWindow& window, const QString& out) {
  QTemporaryDir dir;
  const QString base = R"({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0, "steps_per_print": 20, "wall_clock_breakdown": true,
    "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 120, "warmup_num_steps": 15}},)";
  const QString a = dir.filePath("zero1_lr2e-3.json"), b = dir.filePath("zero2_lr6e-4.json");
  if (!write_config(a, (base + R"("optimizer": {"type": "AdamW", "params": {"lr": 2e-3}}, "zero_optimization": {"stage": 1}})").toUtf8()) ||
      !write_config(b, (base + R"("optimizer": {"type": "AdamW", "params": {"lr": 6e-4}}, "zero_optimization": {"stage": 2}})").toUtf8()))
    return false;
  auto* launch = window.findChild<LaunchPage*>();
  window.showPage("Launch & Watch");
  LaunchSpec spec;
  spec.model = "gpt2";
  spec.layers = 2;
  spec.hidden = 128;
  spec.heads = 4;
  spec.seq_len = 64;
  spec.vocab = 512;
  spec.processes = 2;
  spec.steps = 120;
  spec.session_file = dir.filePath("runs.db").toStdString();
  spec.config_path = a.toStdString();
  spec.name = "zero1 lr 2e-3";
  if (!run_launch(launch, spec)) return false;
  spec.config_path = b.toStdString();
  spec.name = "zero2 lr 6e-4";
  if (!run_launch(launch, spec)) return false;
  bool ok = save_page(window, "Launch & Watch", out + "/launch_watch.png");
  auto* sessions = window.findChild<SessionsPage*>();
  QSignalSpy loaded(sessions, &SessionsPage::catalogLoaded);
  sessions->openFiles({QString::fromStdString(spec.session_file)});
  loaded.wait(10000);
  QSignalSpy drawn(sessions, &SessionsPage::curvesDrawn);
  sessions->selectByName({"zero1 lr 2e-3", "zero2 lr 6e-4"});
  sessions->compareSelected();
  drawn.wait(20000);
  sessions::Smoothing ema;
  ema.kind = sessions::SmoothingKind::kEma;
  ema.weight = 0.6;
  sessions->setSmoothing(ema);
  drawn.wait(5000);
  ok = save_page(window, "Sessions & Compare", out + "/sessions_compare.png") && ok;
  sessions->showTab("Summary");
  ok = save_page(window, "Sessions & Compare", out + "/sessions_summary.png") && ok;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("ShardScopeScreenshots");  // keeps the user's settings untouched
  QApplication::setApplicationName("ShardScope");
  QSettings().clear();  // every shot starts from the defaults (no files reopened from a previous run)
  if (argc != 3) {
    qWarning("usage: shardscope-gui-screenshots SOURCE_DIR OUTPUT_DIR");
    return 2;
  }
  const QString source = argv[1];
  const QString out = argv[2];
  QDir().mkpath(out);
  MainWindow window;
  window.resize(1500, 950);
  window.show();

  auto* estimator = window.findChild<EstimatorPage*>();
  EstimatorInputs in;
  in.model_kind = ModelInputKind::kHfConfig;
  in.hf_config_path = (source + "/tests/estimator/data/hf/llama-2-7b.json").toStdString();
  in.gpus_per_node = 8;
  in.gpu_name = "H100-80GB";
  in.cpu_memory_bytes = 1024 * shardscope::estimator::kGiB;
  in.micro_batch = 1;
  in.seq_len = 2048;
  QSignalSpy updated(estimator, &EstimatorPage::estimateUpdated);
  estimator->setInputs(in);
  // setInputs may have queued several estimates; wait until the last one has landed.
  while (updated.wait(1500)) {
  }
  if (!estimator->view().error.empty()) qWarning("estimate failed: %s", estimator->view().error.c_str());

  auto* editor = window.findChild<ConfigEditorPage*>();
  editor->newFromTemplate("zero2_bf16");
  QString text = editor->editor()->toPlainText();
  text.replace("\"overlap_comm\"", "\"overlap_comms\"");  // a typo the validator names
  text.replace("{\n  \"train_micro", "{\n  \"train_batch_size\": 64,\n  \"train_micro");  // 4 x 1 x 8 = 32
  editor->editor()->setPlainText(text);
  editor->setWorldSize(8);
  editor->validateNow();

  bool ok = save_page(window, "Estimator", out + "/estimator.png");
  ok = save_page(window, "Config Editor", out + "/config_editor.png") && ok;
  ok = shoot_runs(window, out) && ok;
  return ok ? 0 : 1;
}
