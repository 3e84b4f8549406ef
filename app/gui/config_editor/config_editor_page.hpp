#pragma once
// The Config Editor page: a DeepSpeed config as text (highlighted, line numbers) beside a form
// for the keys that matter, kept in sync both ways, validated as you type by the configs library
// (the same validate() `shardscope validate` runs), with the resolved config and a diff against
// the file on disk. Open / Save / Save As / recent files / New from template. "Validate as the
// Hugging Face Trainer fills it" runs the same fill as `shardscope validate --hf-trainer K=V,...`
// (config_editor_hf_trainer.cpp). The DeepSpeed selector chooses whose rules apply, as
// `shardscope validate --deepspeed-version` does (default: the DeepSpeed installed in the active Python).

#include <optional>

#include <QWidget>

#include "app/gui/common/text_file_format.hpp"
#include "configs/config_validator.hpp"

class QAction;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QSpinBox;
class QTableView;
class QTimer;
class QToolBar;

namespace shardscope::gui {

class CodeEditor;
class ConfigForm;
class DiagnosticsModel;
class ResolvedModel;
class RowsTableModel;

class ConfigEditorPage : public QWidget {
  Q_OBJECT

 public:
  explicit ConfigEditorPage(QWidget* parent = nullptr);

  CodeEditor* editor() const { return editor_; }
  ConfigForm* form() const { return form_; }
  DiagnosticsModel* diagnosticsModel() const { return diagnostics_; }
  ResolvedModel* resolvedModel() const { return resolved_; }
  QTableView* diagnosticsView() const { return diagnostics_view_; }
  QString filePath() const { return file_path_; }
  /// The last validation's result.
  const configs::ValidationResult& result() const { return result_; }
  /// File actions for the window's File menu (shortcuts active while this page has focus).
  QList<QAction*> fileActions() const;

  /// Loads `path` into the editor (no prompt); false with a status message if unreadable.
  bool openFile(const QString& path);
  /// Writes the editor's text to `path` atomically; false with a status message on failure.
  bool saveTo(const QString& path);
  /// Replaces the text with a template from configs/templates (e.g. "zero3_cpu_offload").
  bool newFromTemplate(const QString& name);
  /// Names of the built-in templates.
  static QStringList templateNames();
  /// Asks to save unsaved changes; false when the user cancels (the caller must not proceed).
  bool maybeSave();
  /// Runs validation now (instead of waiting for the debounce).
  void validateNow();
  void setWorldSize(int world_size);
  /// Turns the Hugging Face Trainer's fill on with these TrainingArguments ("K=V,...", "" for the
  /// defaults), or off, and validates again.
  void setHfTrainer(bool on, const QString& arguments = QString());
  QCheckBox* hfTrainerCheck() const { return hf_trainer_; }
  QLineEdit* hfArgumentsField() const { return hf_arguments_; }
  /// The keys the Trainer's fill wrote: line of the key, key, value.
  RowsTableModel* hfFilledModel() const { return hf_filled_; }
  /// The TrainingArguments' problem ("--hf-trainer foo=1: unknown ..."), or "".
  QString hfArgumentsError() const { return hf_arguments_error_; }
  /// The same check from a terminal: `shardscope validate FILE [--world-size N] [--hf-trainer K=V,...]
  /// [--deepspeed-version V]`.
  QString cliTwin() const;
  /// Validates with DeepSpeed `version`'s rules, or (nullopt) the installed DeepSpeed's as the CLI's
  /// default is chosen; the selector shows the choice.
  void setDeepSpeedVersion(std::optional<configs::DeepSpeedVersion> version);
  QComboBox* deepSpeedVersionBox() const { return deepspeed_version_; }
  /// Whose rules the last validation applied, and why ("DeepSpeed 0.19.8 rules (...)").
  const configs::DeepSpeedRules& deepSpeedRules() const { return rules_; }

 signals:
  void statusMessage(const QString& message);
  void validated();

 private:
  void buildActions();
  QToolBar* buildToolbar();
  QWidget* buildBottomTabs();
  QWidget* buildDeepSpeedVersionBox();
  void onDeepSpeedVersionChosen();
  QWidget* buildHfTrainerRow();
  QWidget* buildHfFilledTab();
  void applyHfTrainerOption(configs::ValidateOptions& options);
  void showHfTrainerFill();
  void onTextChanged();
  void onFormEdited(const QString& path, const QString& value_json);
  void syncFormFromText();
  void showDiagnostics();
  void updateDiff();
  void updateTitle();
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void openWithDialog();
  bool save();
  bool saveAs();

  CodeEditor* editor_ = nullptr;
  ConfigForm* form_ = nullptr;
  DiagnosticsModel* diagnostics_ = nullptr;
  ResolvedModel* resolved_ = nullptr;
  QTableView* diagnostics_view_ = nullptr;
  QPlainTextEdit* diff_ = nullptr;
  QLabel* file_label_ = nullptr;
  QLabel* summary_ = nullptr;
  QSpinBox* world_size_ = nullptr;
  QComboBox* deepspeed_version_ = nullptr;  ///< item data: "0.19.7", "0.19.8", or "" for the installed one
  QCheckBox* only_non_default_ = nullptr;
  QCheckBox* hf_trainer_ = nullptr;
  QLineEdit* hf_arguments_ = nullptr;
  QLabel* hf_status_ = nullptr;
  QLabel* cli_twin_ = nullptr;
  RowsTableModel* hf_filled_ = nullptr;
  QString hf_arguments_error_;
  QTimer* debounce_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QMenu* template_menu_ = nullptr;
  QAction* open_ = nullptr;
  QAction* save_ = nullptr;
  QAction* save_as_ = nullptr;
  QAction* undo_ = nullptr;
  QAction* redo_ = nullptr;
  QString file_path_;
  QString disk_text_;  ///< the file's text at the last open or save, for the diff
  TextFileFormat disk_format_;  ///< its line endings and BOM, which a save keeps
  configs::ValidationResult result_;
  configs::DeepSpeedRules rules_;
  bool applying_form_ = false;
};

}  // namespace shardscope::gui
