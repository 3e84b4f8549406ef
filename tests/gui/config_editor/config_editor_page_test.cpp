// The Config Editor without pixels: a form edit changes only the value it edits (formatting,
// number spellings and comments elsewhere survive byte for byte, one undo step), hjson DeepSpeed
// accepts keeps the form usable, fp16 and bf16 both on show as the conflict they are, JSON edits
// update the form, diagnostics point at the right lines and clicking one selects it, the world size
// feeds the batch identity, save/diff work; a CRLF file with a byte order mark keeps both through
// a form edit and a save (only the edited bytes change), a file that is not UTF-8 is refused with
// its line; the Open and Save dialogs list .jsonc files and Save As is Ctrl+Shift+S on any desktop;
// a newly opened file's diagnostics start at the top; plus an offscreen smoke test of every page.
#include <QApplication>
#include <QComboBox>
#include <QFileDialog>
#include <QScrollBar>
#include <QTimer>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QWheelEvent>

#include <nlohmann/json.hpp>

#include "app/gui/common/code_editor.hpp"
#include "app/gui/config_editor/config_editor_models.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/config_editor/config_form.hpp"
#include "app/gui/config_editor/config_form_fields.hpp"
#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/main_window.hpp"

using namespace shardscope::gui;
using Json = nlohmann::json;

class ConfigEditorPageTest : public QObject {
  Q_OBJECT

  static Json editorJson(ConfigEditorPage& page) {
    return Json::parse(page.editor()->toPlainText().toStdString(), nullptr, true, true);
  }

 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("ShardScopeTest"); }

  void templatesAreBuiltIn() {
    QVERIFY(ConfigEditorPage::templateNames().contains("zero3_cpu_offload"));
    QVERIFY(ConfigEditorPage::templateNames().size() >= 5);
  }

  void formEditRewritesJsonKeepingOtherKeys() {
    ConfigEditorPage page;
    QVERIFY(page.newFromTemplate("zero2_bf16"));
    const QString original = page.editor()->toPlainText();
    auto* stage = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.stage"));
    QVERIFY(stage);
    QCOMPARE(stage->currentText(), QString("2"));
    stage->setCurrentText("3");
    Json json = editorJson(page);
    QCOMPARE(json["zero_optimization"]["stage"].get<int>(), 3);
    QCOMPARE(json["zero_optimization"]["reduce_scatter"].get<bool>(), true);  // untouched keys survive
    QCOMPARE(json["wall_clock_breakdown"].get<bool>(), false);
    QCOMPARE(json["optimizer"]["params"]["betas"][1].get<double>(), 0.95);
    auto* device = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.offload_optimizer.device"));
    device->setCurrentText("cpu");
    QCOMPARE(editorJson(page)["zero_optimization"]["offload_optimizer"]["device"].get<std::string>(), "cpu");
    auto* precision = qobject_cast<QComboBox*>(page.form()->fieldWidget("precision"));
    precision->setCurrentText("fp16");
    json = editorJson(page);
    QCOMPARE(json["fp16"]["enabled"].get<bool>(), true);
    QCOMPARE(json["bf16"]["enabled"].get<bool>(), false);
    auto* lr = qobject_cast<QLineEdit*>(page.form()->fieldWidget("optimizer.params.lr"));
    lr->clear();
    QTest::keyClicks(lr, "1e-5");
    QCOMPARE(editorJson(page)["optimizer"]["params"]["lr"].get<double>(), 1e-5);
    // Each form edit is one undo step through the document's own stack.
    for (int i = 0; i < 20 && page.editor()->document()->isUndoAvailable(); ++i) page.editor()->undo();
    QCOMPARE(page.editor()->toPlainText(), original);
    QCOMPARE(stage->currentText(), QString("2"));
  }

  void formEditChangesOnlyTheValueItEdits() {
    // Hand-written hjson: comments, a compact object, 3e-4, an unquoted key, a trailing comma.
    const QString original =
        "{\n"
        "  // batch: 4 x 2 x world size\n"
        "  \"train_micro_batch_size_per_gpu\": 4,\n"
        "  \"bf16\": {\"enabled\": true},\n"
        "  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 3e-4, \"betas\": [0.9, 0.95]}},\n"
        "  zero_optimization: {\n"
        "    \"stage\": 2,  # sharded gradients\n"
        "    \"reduce_bucket_size\": 5e8,\n"
        "  },\n"
        "}\n";
    ConfigEditorPage page;
    page.editor()->setPlainText(original);
    auto* stage = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.stage"));
    QVERIFY(stage->isEnabled());  // hjson DeepSpeed accepts keeps the form usable
    QCOMPARE(stage->currentText(), QString("2"));
    QCOMPARE(qobject_cast<QLineEdit*>(page.form()->fieldWidget("optimizer.params.lr"))->text(), QString("3e-4"));
    stage->setCurrentText("3");
    QString expected = original;
    expected.replace("\"stage\": 2,", "\"stage\": 3,");
    QCOMPARE(page.editor()->toPlainText(), expected);  // byte for byte outside the edited value
    // A new key goes after its siblings, in their layout; nothing else moves.
    auto* overlap = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.overlap_comm"));
    overlap->setCurrentText("true");
    expected.replace("    \"reduce_bucket_size\": 5e8,\n", "    \"reduce_bucket_size\": 5e8,\n    \"overlap_comm\": true\n");
    QCOMPARE(page.editor()->toPlainText(), expected);
    // Two undos give the original back.
    page.editor()->undo();
    page.editor()->undo();
    QCOMPARE(page.editor()->toPlainText(), original);
  }

  void bothPrecisionsOnShowTheConflict() {
    ConfigEditorPage page;
    page.editor()->setPlainText("{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}");
    auto* precision = qobject_cast<QComboBox*>(page.form()->fieldWidget("precision"));
    QVERIFY2(precision->currentText().contains("conflict"), qPrintable(precision->currentText()));
    QVERIFY(precision->toolTip().contains("cannot be simultaneously enabled"));
    // Choosing a mode resolves it, and the conflict item goes away.
    precision->setCurrentText("bf16");
    QCOMPARE(page.editor()->toPlainText(), QString("{\"fp16\": {\"enabled\": false}, \"bf16\": {\"enabled\": true}}"));
    QCOMPARE(precision->findText(QString(kPrecisionConflict) + " (conflict)"), -1);
  }

  // The DeepSpeed selector feeds the page's validation, as --deepspeed-version feeds `validate`: an
  // "amp" block is deprecated under 0.19.7 (a warning) and rejected at parse by 0.19.8 (an error).
  void theDeepSpeedSelectorChangesTheVerdict() {
    ConfigEditorPage page;
    auto* box = page.deepSpeedVersionBox();
    QVERIFY(box);
    QCOMPARE(box->itemData(0).toString(), QString());  // the installed one, chosen as the CLI's default is
    QVERIFY2(box->itemText(0).startsWith("installed DeepSpeed ("), qPrintable(box->itemText(0)));
    page.setDeepSpeedVersion(shardscope::configs::DeepSpeedVersion::k0_19_7);
    page.editor()->setPlainText(R"({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "amp": {"enabled": false}})");
    page.validateNow();
    auto codes = [&page](shardscope::configs::Severity severity) {
      QStringList out;
      for (const auto& d : page.result().diagnostics)
        if (d.severity == severity) out << QString::fromStdString(d.code);
      return out;
    };
    QVERIFY2(codes(shardscope::configs::Severity::kError).isEmpty(),
             qPrintable(codes(shardscope::configs::Severity::kError).join(",")));
    QVERIFY(codes(shardscope::configs::Severity::kWarning).contains("deprecated-key"));
    QVERIFY2(page.cliTwin().endsWith("--deepspeed-version 0.19.7"), qPrintable(page.cliTwin()));

    QSignalSpy validated(&page, &ConfigEditorPage::validated);
    box->setCurrentIndex(box->findData(QString("0.19.8")));  // as a user picks it
    QCOMPARE(validated.count(), 1);
    QCOMPARE(page.deepSpeedRules().version, shardscope::configs::DeepSpeedVersion::k0_19_8);
    QCOMPARE(QString::fromStdString(page.deepSpeedRules().describe()),
             QString("DeepSpeed 0.19.8 rules (--deepspeed-version)"));
    QVERIFY(codes(shardscope::configs::Severity::kError).contains("removed-feature"));
    QVERIFY2(page.cliTwin().endsWith("--deepspeed-version 0.19.8"), qPrintable(page.cliTwin()));

    page.setDeepSpeedVersion(std::nullopt);  // back to the installed DeepSpeed: the CLI's default, no flag
    QVERIFY(!page.cliTwin().contains("--deepspeed-version"));
  }

  // Scrolling the form over a combo box does not change it; once clicked into, the wheel does.
  void theWheelScrollsPastAnUnfocusedField() {
    ConfigEditorPage page;
    page.resize(1200, 700);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.editor()->setPlainText("{\"zero_optimization\": {\"stage\": 2}}");
    auto* stage = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.stage"));
    const QString before = page.editor()->toPlainText();
    const auto wheel = [&] {
      QWheelEvent event(QPointF(5, 5), stage->mapToGlobal(QPointF(5, 5)), QPoint(), QPoint(0, -120), Qt::NoButton,
                        Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(stage, &event);
    };
    page.editor()->setFocus();
    wheel();
    QCOMPARE(page.editor()->toPlainText(), before);
    QCOMPARE(stage->focusPolicy(), Qt::StrongFocus);
    stage->setFocus();
    QTRY_VERIFY(stage->hasFocus());
    wheel();
    QVERIFY2(page.editor()->toPlainText() != before, qPrintable(page.editor()->toPlainText()));
  }

  void aPrecisionLeftToTheTrainerShowsAsAuto() {
    ConfigEditorPage page;
    page.editor()->setPlainText("{\"bf16\": {\"enabled\": \"auto\"}}");
    auto* precision = qobject_cast<QComboBox*>(page.form()->fieldWidget("precision"));
    QVERIFY2(precision->currentText().startsWith("auto"), qPrintable(precision->currentText()));
    QVERIFY(precision->toolTip().contains("Trainer"));
    QCOMPARE(page.editor()->toPlainText(), QString("{\"bf16\": {\"enabled\": \"auto\"}}"));  // showing writes nothing
    precision->setCurrentText("bf16");  // choosing a mode writes it, and the auto item goes away
    QCOMPARE(page.editor()->toPlainText(), QString("{\"bf16\": {\"enabled\": true}}"));
    QCOMPARE(precision->findText(QString(kPrecisionAuto) + " (the Trainer's --fp16 / --bf16)"), -1);
  }

  void aSyntaxErrorSaysWhereNotJsonLibraryText() {
    ConfigEditorPage page;
    page.editor()->setPlainText("{\n  \"zero_optimization\": {\"stage\": 2\n  \"x\" 1\n}\n");
    QVERIFY(!page.form()->fieldWidget("zero_optimization.stage")->isEnabled());
    const QLabel* error = page.form()->findChild<QLabel*>();
    QVERIFY(error);
    QVERIFY2(error->text().contains("line 3, column 7"), qPrintable(error->text()));
    QVERIFY(!error->text().contains("json.exception"));
    // The monitors' label reads as written (a bare '&' in a form label is a mnemonic).
    bool found = false;
    for (const QLabel* label : page.form()->findChildren<QLabel*>())
      if (label->buddy() == page.form()->fieldWidget("wandb.enabled")) {
        found = true;
        QCOMPARE(label->text(), QString("Weights && Biases"));  // drawn as "Weights & Biases"
      }
    QVERIFY(found);
  }

  void jsonEditUpdatesForm() {
    ConfigEditorPage page;
    page.editor()->setPlainText(
        "{\n  // comments are allowed, as DeepSpeed's hjson reader allows them\n"
        "  \"train_batch_size\": 64,\n  \"fp16\": {\"enabled\": true},\n"
        "  \"zero_optimization\": {\"stage\": 1},\n  \"optimizer\": {\"type\": \"Lamb\", \"params\": {\"lr\": 0.002}},\n"
        "  \"tensorboard\": {\"enabled\": true}\n}\n");
    auto combo = [&](const char* path) { return qobject_cast<QComboBox*>(page.form()->fieldWidget(path))->currentText(); };
    auto edit = [&](const char* path) { return qobject_cast<QLineEdit*>(page.form()->fieldWidget(path))->text(); };
    QCOMPARE(combo("zero_optimization.stage"), QString("1"));
    QCOMPARE(combo("precision"), QString("fp16"));
    QCOMPARE(combo("optimizer.type"), QString("Lamb"));
    QCOMPARE(combo("tensorboard.enabled"), QString("true"));
    QCOMPARE(combo("scheduler.type"), QString());
    QCOMPARE(edit("train_batch_size"), QString("64"));
    QCOMPARE(edit("optimizer.params.lr"), QString("0.002"));
    QVERIFY(page.form()->fieldWidget("zero_optimization.stage")->isEnabled());
    page.editor()->setPlainText("{\"zero_optimization\": {\"stage\": 2,}");  // unterminated
    QVERIFY(!page.form()->fieldWidget("zero_optimization.stage")->isEnabled());
  }

  void diagnosticsPointAtLinesAndSelectThem() {
    ConfigEditorPage page;
    page.editor()->setPlainText(
        "{\n  \"train_micro_batch_size_per_gpu\": 2,\n  \"zero_optimization\": {\n"
        "    \"stage\": 2,\n    \"overlap_comms\": true\n  }\n}\n");
    page.validateNow();
    DiagnosticsModel* model = page.diagnosticsModel();
    int row = -1;
    for (int r = 0; r < model->rowCount(); ++r)
      if (model->diagnostic(r).code == "unknown-key") row = r;
    QVERIFY(row >= 0);
    QCOMPARE(model->diagnostic(row).location.line, 5);
    QVERIFY(model->data(model->index(row, DiagnosticsModel::kHint), Qt::DisplayRole).toString().contains("overlap_comm"));
    emit page.diagnosticsView()->clicked(model->index(row, DiagnosticsModel::kMessage));
    QCOMPARE(page.editor()->textCursor().blockNumber(), 4);
    QCOMPARE(page.editor()->textCursor().selectedText(), QString("    \"overlap_comms\": true"));
  }

  void worldSizeFeedsBatchIdentity() {
    ConfigEditorPage page;
    page.editor()->setPlainText("{\n  \"train_batch_size\": 32,\n  \"train_micro_batch_size_per_gpu\": 4,\n"
                                "  \"gradient_accumulation_steps\": 2\n}\n");
    auto has_identity_error = [&] {
      for (const auto& d : page.result().diagnostics)
        if (d.code == "batch-identity") return true;
      return false;
    };
    page.setWorldSize(4);  // 4 x 2 x 4 = 32
    QVERIFY(!has_identity_error());
    page.setWorldSize(2);  // 4 x 2 x 2 = 16 != 32
    QVERIFY(has_identity_error());
  }

  void resolvedViewFiltersDefaults() {
    ConfigEditorPage page;
    QVERIFY(page.newFromTemplate("zero3_cpu_offload"));
    ResolvedModel* model = page.resolvedModel();
    const int all = model->rowCount();
    model->setOnlyNonDefault(true);
    QVERIFY(model->rowCount() > 5);
    QVERIFY(model->rowCount() < all);
    for (int r = 0; r < model->rowCount(); ++r)
      QVERIFY(!model->data(model->index(r, ResolvedModel::kSource), Qt::DisplayRole).toString().startsWith("default"));
  }

  void saveOpenAndDiff() {
    QTemporaryDir dir;
    const QString path = dir.filePath("ds.json");
    ConfigEditorPage page;
    QVERIFY(page.newFromTemplate("zero2_fp16"));
    QVERIFY(page.editor()->document()->isModified());
    QVERIFY(page.saveTo(path));
    QVERIFY(!page.editor()->document()->isModified());
    ConfigEditorPage other;
    QVERIFY(other.openFile(path));
    QCOMPARE(other.editor()->toPlainText(), page.editor()->toPlainText());
    QCOMPARE(other.filePath(), QFileInfo(path).absoluteFilePath());
    const std::string diff = line_diff("a\nb\nc\n", "a\nB\nc\nd\n");
    QCOMPARE(QString::fromStdString(diff), QString("  a\n- b\n+ B\n  c\n+ d\n"));
    QVERIFY(!other.openFile(dir.filePath("missing.json")));
    // Recent files are remembered in QSettings, newest first.
    QCOMPARE(QSettings().value("configEditor/recentFiles").toStringList().value(0), QFileInfo(path).absoluteFilePath());
  }

  // A Windows editor's config: CRLF line ends, a UTF-8 byte order mark, no final newline. A form
  // edit used to save it with LF endings: every line differed on disk and in "Diff against disk".
  void lineEndingsAndEncodingSurviveAFormEdit() {
    QTemporaryDir dir;
    const QString path = dir.filePath("windows.json");
    const QByteArray original = "\xEF\xBB\xBF{\r\n  \"train_micro_batch_size_per_gpu\": 2,\r\n"
                                "  \"zero_optimization\": {\r\n    \"stage\": 2\r\n  }\r\n}";
    {
      QFile file(path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(original);
    }
    ConfigEditorPage page;
    QVERIFY(page.openFile(path));
    QVERIFY(!page.editor()->toPlainText().contains('\r'));
    QVERIFY(!page.editor()->toPlainText().startsWith(QChar(0xFEFF)));
    auto* stage = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.stage"));
    QVERIFY(stage);
    stage->setCurrentText("3");
    QVERIFY(page.saveTo(path));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QByteArray expected = original;
    expected.replace("\"stage\": 2", "\"stage\": 3");
    QCOMPARE(file.readAll(), expected);
    // An LF file stays LF, with its final newline.
    const QString lf = dir.filePath("lf.json");
    QFile lf_file(lf);
    QVERIFY(lf_file.open(QIODevice::WriteOnly));
    lf_file.write("{\n  \"gradient_accumulation_steps\": 1\n}\n");
    lf_file.close();
    QVERIFY(page.openFile(lf));
    QVERIFY(page.saveTo(lf));
    QVERIFY(lf_file.open(QIODevice::ReadOnly));
    QCOMPARE(lf_file.readAll(), QByteArray("{\n  \"gradient_accumulation_steps\": 1\n}\n"));
  }

  void theDiffOfACrlfFileShowsOnlyTheEditedLine() {
    QTemporaryDir dir;
    const QString path = dir.filePath("crlf.json");
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\r\n  \"gradient_accumulation_steps\": 1,\r\n  \"zero_optimization\": {\"stage\": 1}\r\n}\r\n");
    file.close();
    ConfigEditorPage page;
    QVERIFY(page.openFile(path));
    auto* stage = qobject_cast<QComboBox*>(page.form()->fieldWidget("zero_optimization.stage"));
    stage->setCurrentText("2");
    QPlainTextEdit* diff = nullptr;
    for (auto* edit : page.findChildren<QPlainTextEdit*>())
      if (edit->isReadOnly()) diff = edit;
    QVERIFY(diff);
    page.validateNow();
    const QStringList lines = diff->toPlainText().split('\n', Qt::SkipEmptyParts);
    int changed = 0;
    for (const QString& line : lines) changed += line.startsWith("- ") || line.startsWith("+ ");
    QCOMPARE(changed, 2);  // the stage's line out and in
  }

  void aFileThatIsNotUtf8IsRefusedWithItsLine() {
    QTemporaryDir dir;
    const QString path = dir.filePath("latin1.json");
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\n  \"comment\": \"caf\xE9\"\n}\n");  // Latin-1: a save would have replaced the byte for good
    file.close();
    ConfigEditorPage page;
    const QString before = page.editor()->toPlainText();
    QSignalSpy status(&page, &ConfigEditorPage::statusMessage);
    QVERIFY(!page.openFile(path));
    QCOMPARE(page.editor()->toPlainText(), before);
    QVERIFY2(status.last().first().toString().contains("not UTF-8 at line 2"), qPrintable(status.last().first().toString()));
  }

  // The Diagnostics table kept the last file's scroll position, so a new file's first errors were above the view.
  void aNewlyOpenedFileShowsItsFirstDiagnostics() {
    QTemporaryDir dir;
    QString many = "{\n";
    for (int i = 0; i < 60; ++i) many += QString("  \"unknown_key_%1\": %1,\n").arg(i);
    many += "  \"train_micro_batch_size_per_gpu\": 1\n}\n";
    const QString path = dir.filePath("many.json");
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(many.toUtf8());
    file.close();
    ConfigEditorPage page;
    page.resize(1000, 700);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QVERIFY(page.openFile(path));
    QScrollBar* bar = page.diagnosticsView()->verticalScrollBar();
    QTRY_VERIFY(bar->maximum() > 0);  // the view lays its rows out after the event loop turns
    bar->setValue(bar->maximum());
    QVERIFY(page.openFile(path));
    QApplication::processEvents();
    QCOMPARE(bar->value(), 0);
  }

  // Save As is Ctrl+Shift+S (QKeySequence::SaveAs is empty outside GNOME and KDE); the dialogs
  // offer .jsonc, which DeepSpeed reads as it reads any config path.
  void saveAsIsCtrlShiftSAndTheDialogsListJsonc() {
    ConfigEditorPage page;
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QApplication::setActiveWindow(&page);
    page.editor()->setFocus();
    QStringList filters;
    QString title;
    auto read_and_close = [&] {
      auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
      if (!dialog) return;
      title = dialog->windowTitle();
      filters = dialog->nameFilters();
      dialog->reject();
    };
    QTimer::singleShot(200, read_and_close);
    QTest::keyClick(page.editor(), Qt::Key_S, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(title, QString("Save DeepSpeed config"));
    QVERIFY2(filters.value(0).contains("*.jsonc"), qPrintable(filters.join(";;")));
    title.clear();
    QApplication::setActiveWindow(&page);  // offscreen, no window manager gives it back after the dialog
    QTimer::singleShot(200, read_and_close);
    QTest::keyClick(page.editor(), Qt::Key_O, Qt::ControlModifier);
    QCOMPARE(title, QString("Open DeepSpeed config"));
    QVERIFY2(filters.value(0).contains("*.jsonc") && filters.value(0).contains("*.hjson"), qPrintable(filters.join(";;")));
  }

  void smokeMainWindowOpensEveryPage() {
    MainWindow window;
    window.show();
    for (const char* title : {"Environment", "Estimator", "Config Editor"}) QVERIFY(window.showPage(title));
    auto* estimator = window.findChild<EstimatorPage*>();
    QVERIFY(estimator);
    QSignalSpy updated(estimator, &EstimatorPage::estimateUpdated);
    QVERIFY(updated.wait(10000));
    QVERIFY(estimator->view().error.empty());
    QVERIFY(!window.grab().isNull());
  }
};

QTEST_MAIN(ConfigEditorPageTest)
#include "config_editor_page_test.moc"
