// shardscope-gui-screenshots: renders each page of the workbench with real content (a Llama-2-7B
// config.json on 8 x H100 for the Estimator, a template with two mistakes for the Config Editor)
// and writes docs/screenshots/<page>.png. Runs offscreen: QT_QPA_PLATFORM=offscreen.
#include <QApplication>
#include <QDir>
#include <QSignalSpy>
#include <QTimer>

#include "app/gui/code_editor.hpp"
#include "app/gui/config_editor_page.hpp"
#include "app/gui/estimator_page.hpp"
#include "app/gui/main_window.hpp"
#include "estimator/byte_units.hpp"

using namespace shardscope::gui;

namespace {

bool save_page(MainWindow& window, const QString& title, const QString& path) {
  window.showPage(title);
  QApplication::processEvents();
  const bool ok = window.grab().save(path);
  qInfo("%s %s", ok ? "wrote" : "FAILED to write", qPrintable(path));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("ShardScopeScreenshots");  // keeps the user's settings untouched
  QApplication::setApplicationName("ShardScope");
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
  return ok ? 0 : 1;
}
