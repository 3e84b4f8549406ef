// The Config Editor's "Validate as the Hugging Face Trainer fills it" against the CLI: a config
// with "auto" values and keys that mismatch the TrainingArguments gives, in the Diagnostics list,
// exactly the diagnostics (code, line, message) of `shardscope validate --hf-trainer K=V --json`,
// and the "Trainer fill" tab lists what the CLI's report says was filled. Bad TrainingArguments
// are named; without the option, "auto" keeps today's warnings.
#include <QCheckBox>
#include <QFileInfo>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>
#include <QTextBlock>

#include <nlohmann/json.hpp>

#include "app/gui/common/code_editor.hpp"
#include "app/gui/config_editor/config_editor_models.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/common/rows_table_model.hpp"
#include "tests/app/cli_process.hpp"

using namespace shardscope::gui;
using Json = nlohmann::json;

namespace {

const QString kFixture = QString(SHARDSCOPE_SOURCE_DIR) + "/tests/gui/data/hf_auto_mismatch.json";
const QString kArguments = "per_device_train_batch_size=4,gradient_accumulation_steps=2,learning_rate=3e-5,bf16=true";

// "code line message" of every diagnostic, in order.
QStringList page_diagnostics(const ConfigEditorPage& page) {
  QStringList out;
  for (const auto& d : page.result().diagnostics)
    out << QString("%1 %2 %3").arg(QString::fromStdString(d.code)).arg(d.location.line).arg(QString::fromStdString(d.message));
  return out;
}

Json cli_report(const std::vector<std::string>& extra) {
  std::vector<std::string> args{"validate", kFixture.toStdString(), "--world-size", "2", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = shardscope::testing::run_cli(args);
  if (result.exit_code != 0 && result.exit_code != 1) qFatal("shardscope validate failed: %s", result.err.c_str());
  return Json::parse(result.out)["files"][0];
}

QStringList cli_diagnostics(const Json& file) {
  QStringList out;
  for (const auto& d : file["diagnostics"])
    out << QString("%1 %2 %3").arg(QString::fromStdString(d["code"].get<std::string>())).arg(d["line"].get<int>())
               .arg(QString::fromStdString(d["message"].get<std::string>()));
  return out;
}

}  // namespace

class ConfigEditorHfTrainerTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("ShardScopeHfTrainerTest"); }

  void mismatchesAndFillEqualTheCli() {
    ConfigEditorPage page;
    QVERIFY(page.openFile(kFixture));
    page.setWorldSize(2);
    page.setHfTrainer(true, kArguments);
    QVERIFY(page.hfArgumentsError().isEmpty());
    QVERIFY(page.result().hf_trainer);
    const Json cli = cli_report({"--hf-trainer", kArguments.toStdString()});
    QCOMPARE(page_diagnostics(page), cli_diagnostics(cli));
    // transformers' mismatch text, at the line of each key.
    int mismatches = 0;
    for (const auto& d : page.result().diagnostics)
      if (d.code == "hf-trainer-mismatch") {
        ++mismatches;
        QVERIFY(QString::fromStdString(d.message).startsWith(
            "Please correct the following DeepSpeed config values that mismatch TrainingArguments values:"));
        const QString line = page.editor()->document()->findBlockByNumber(d.location.line - 1).text();
        QVERIFY2(line.contains(QString::fromStdString(d.path.substr(d.path.rfind('.') + 1))),
                 qPrintable(line));
      }
    QCOMPARE(mismatches, 2);  // gradient_accumulation_steps 4 vs 2, optimizer.params.lr 0.001 vs 3e-05
    QCOMPARE(page.diagnosticsModel()->rowCount(), static_cast<int>(cli["diagnostics"].size()));
    // The filled values, as the CLI's report lists them, with the line of each key.
    const Json& filled = cli["hf_trainer"]["filled"];
    RowsTableModel* model = page.hfFilledModel();
    QCOMPARE(model->rowCount(), static_cast<int>(filled.size()));
    for (int r = 0; r < model->rowCount(); ++r) {
      const std::string key = model->row(r).value(1).toString().toStdString();
      QVERIFY2(filled.contains(key), key.c_str());
      QVERIFY2(Json::parse(model->row(r).value(2).toString().toStdString()) == filled[key], key.c_str());
      QVERIFY(model->row(r).value(0).toInt() > 0);
      if (key == "train_batch_size") QCOMPARE(model->row(r).value(0).toInt(), 2);  // the fixture's line 2
      if (key == "optimizer.params.eps") QCOMPARE(model->row(r).value(0).toInt(), 14);
    }
    QVERIFY(filled["train_batch_size"] == Json(16));  // 4 per device x 2 accumulation x world 2
    QCOMPARE(page.cliTwin(), QString("shardscope validate %1 --world-size 2 --hf-trainer %2")
                                 .arg(QFileInfo(kFixture).absoluteFilePath(), kArguments));
  }

  void theCheckBoxAndFieldDriveIt() {
    ConfigEditorPage page;
    QVERIFY(page.openFile(kFixture));
    QVERIFY(!page.hfArgumentsField()->isEnabled());  // off: today's behaviour, nothing to type
    page.hfTrainerCheck()->setChecked(true);          // validates at once, with transformers' defaults
    QVERIFY(page.hfArgumentsField()->isEnabled());
    QVERIFY(page.result().hf_trainer);
    QCOMPARE(page.result().hf_trainer->arguments.per_device_train_batch_size, 8LL);
    QSignalSpy validated(&page, &ConfigEditorPage::validated);
    page.hfArgumentsField()->setText("per_device_train_batch_size=2");  // debounced, as typing is
    QVERIFY(validated.wait(5000));
    QCOMPARE(page.result().hf_trainer->arguments.per_device_train_batch_size, 2LL);
    QVERIFY(page.cliTwin().endsWith("--hf-trainer per_device_train_batch_size=2"));
    page.hfTrainerCheck()->setChecked(false);
    QVERIFY(!page.result().hf_trainer);
    QVERIFY(!page.cliTwin().contains("--hf-trainer"));
  }

  void badArgumentsAreNamedAndOffKeepsTodaysWarnings() {
    ConfigEditorPage page;
    QVERIFY(page.openFile(kFixture));
    page.setHfTrainer(true, "learning_rate=fast");
    QVERIFY2(page.hfArgumentsError().contains("learning_rate=fast"), qPrintable(page.hfArgumentsError()));
    QVERIFY(!page.result().hf_trainer);
    page.setHfTrainer(false);
    QVERIFY(page.hfArgumentsError().isEmpty());
    QVERIFY(!page.result().hf_trainer);
    QCOMPARE(page.hfFilledModel()->rowCount(), 0);
    page.setWorldSize(2);
    QCOMPARE(page_diagnostics(page), cli_diagnostics(cli_report({})));
    bool unfilled = false;
    for (const auto& d : page.result().diagnostics) unfilled = unfilled || d.code == "unfilled-auto";
    QVERIFY(unfilled);
  }
};

QTEST_MAIN(ConfigEditorHfTrainerTest)
#include "config_editor_hf_trainer_test.moc"
