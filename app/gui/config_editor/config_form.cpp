#include "app/gui/config_editor/config_form.hpp"

#include <utility>

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include "app/gui/config_editor/config_form_fields.hpp"

namespace shardscope::gui {
namespace {

QString tooltip(const FormField& field) {
  const QString key = field.path == "precision" ? "fp16.enabled / bf16.enabled" : QString::fromStdString(field.path);
  return QString("<b>%1</b><br>%2").arg(key, QString::fromStdString(field.help));
}

}  // namespace

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // a long message wraps, never widens
  error_->setStyleSheet("color: #b00020");
  error_->hide();
  layout->addWidget(error_);
  QGroupBox* group = nullptr;
  QFormLayout* form = nullptr;
  for (const FormField& field : config_form_fields()) {
    if (!group || group->title() != QString::fromStdString(field.group)) {
      group = new QGroupBox(QString::fromStdString(field.group));
      form = new QFormLayout(group);
      layout->addWidget(group);
    }
    const QString path = QString::fromStdString(field.path);
    QWidget* widget = nullptr;
    if (field.kind == FormFieldKind::kNumber) {
      auto* edit = new QLineEdit;
      edit->setPlaceholderText(tr("default"));
      edit->setClearButtonEnabled(true);
      connect(edit, &QLineEdit::textEdited, this, [this, edit, path](const QString& text) {
        const auto json = number_field_json(text.toStdString());
        edit->setStyleSheet(json ? QString() : QString("background: #ffe0e0"));
        if (json && !updating_) emit fieldEdited(path, QString::fromStdString(*json));
      });
      widget = edit;
    } else {
      auto* combo = new QComboBox;
      if (field.kind != FormFieldKind::kPrecision) combo->addItem(QString());  // unset: DeepSpeed's default
      if (field.kind == FormFieldKind::kTriBool) combo->addItems({"true", "false"});
      for (const auto& choice : field.choices) combo->addItem(QString::fromStdString(choice));
      combo->setEditable(field.kind == FormFieldKind::kChoice);
      connect(combo, &QComboBox::currentTextChanged, this, [this, combo, path, kind = field.kind](const QString& text) {
        if (updating_ || text.startsWith(QLatin1String(kPrecisionConflict)) || text.startsWith(QLatin1String(kPrecisionAuto)))
          return;
        if (kind == FormFieldKind::kPrecision) {  // a chosen mode ends the conflict
          updating_ = true;
          showPrecision(combo, text);
          updating_ = false;
        }
        const std::string json = kind == FormFieldKind::kTriBool ? text.toStdString()
                                                                  : choice_field_json(text.toStdString());
        emit fieldEdited(path, QString::fromStdString(json));
      });
      widget = combo;
    }
    widget->setToolTip(tooltip(field));
    if (field.kind == FormFieldKind::kPrecision) precision_tooltip_ = tooltip(field);
    widget->setObjectName(path);
    widgets_.insert(path, widget);
    // A form label's '&' marks a mnemonic; "Weights & Biases" must read as written.
    form->addRow(QString::fromStdString(field.label).replace('&', "&&"), widget);
  }
  layout->addStretch(1);
}

void ConfigForm::setValues(const std::map<std::string, std::string>& values) {
  updating_ = true;
  for (const auto& [path, json] : values) {
    QWidget* widget = widgets_.value(QString::fromStdString(path));
    const QString text = QString::fromStdString(field_display_text(json));
    if (auto* edit = qobject_cast<QLineEdit*>(widget)) {
      // Leave a field being typed in alone when it already means the same value ("1e-4" vs "0.0001").
      const auto typed = number_field_json(edit->text().toStdString());
      const bool same = typed && json_values_equal(*typed, json);
      if (!same) edit->setText(text);
      edit->setStyleSheet(QString());
    } else if (auto* combo = qobject_cast<QComboBox*>(widget)) {
      if (path == "precision") showPrecision(combo, text);
      else combo->setCurrentText(text);
    }
  }
  updating_ = false;
}

void ConfigForm::showPrecision(QComboBox* combo, const QString& mode) {
  // fp16 and bf16 both on is no mode DeepSpeed runs: show the conflict, not one of the two. An
  // "auto" flag is the Hugging Face Trainer's to fill: show that, not fp32.
  const QString conflict = QString::fromLatin1(kPrecisionConflict) + tr(" (conflict)");
  const QString trainer = QString::fromLatin1(kPrecisionAuto) + tr(" (the Trainer's --fp16 / --bf16)");
  const bool is_conflict = mode == QLatin1String(kPrecisionConflict), is_auto = mode == QLatin1String(kPrecisionAuto);
  for (const auto& [item, keep] : {std::pair{conflict, is_conflict}, std::pair{trainer, is_auto}})
    if (const int index = combo->findText(item); index >= 0 && !keep) combo->removeItem(index);
  if (is_conflict || is_auto) {
    const QString& item = is_conflict ? conflict : trainer;
    if (combo->findText(item) < 0) combo->addItem(item);
    combo->setCurrentText(item);
    combo->setStyleSheet(is_conflict ? "QComboBox { color: #b00020; }" : QString());
    combo->setToolTip(is_conflict ? tr("<b>fp16.enabled and bf16.enabled are both true</b><br>DeepSpeed refuses this: "
                                       "\"bfloat16 and fp16 modes cannot be simultaneously enabled\". Choose one.")
                                  : tr("<b>fp16.enabled or bf16.enabled is \"auto\"</b><br>The Hugging Face Trainer "
                                       "fills it from --fp16 / --bf16 (validate with the Trainer option to see how). "
                                       "Choosing a mode here writes it."));
    return;
  }
  combo->setCurrentText(mode);
  combo->setStyleSheet(QString());
  combo->setToolTip(precision_tooltip_);
}

void ConfigForm::setParseError(const QString& error) {
  error_->setVisible(!error.isEmpty());
  error_->setText(tr("Fix the JSON syntax to edit with the form: %1").arg(error));
  for (QWidget* widget : widgets_) widget->setEnabled(error.isEmpty());
}

}  // namespace shardscope::gui
