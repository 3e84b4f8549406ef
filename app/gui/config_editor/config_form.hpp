#pragma once
// The Config Editor's form: one widget per field of config_form_fields(), grouped, each with a
// tooltip naming its DeepSpeed key. It never edits the text itself: a user edit emits
// fieldEdited(path, json) and the page routes it through the document (so undo covers it).

#include <map>
#include <string>

#include <QHash>
#include <QWidget>

class QComboBox;
class QLabel;

namespace shardscope::gui {

class ConfigForm : public QWidget {
  Q_OBJECT

 public:
  explicit ConfigForm(QWidget* parent = nullptr);

  /// Shows `values` (path -> compact JSON, "" = absent) without emitting fieldEdited.
  void setValues(const std::map<std::string, std::string>& values);
  /// The widget editing `path` (QLineEdit or QComboBox), for tests and focus.
  QWidget* fieldWidget(const QString& path) const { return widgets_.value(path); }
  /// Disables the fields (with a reason shown above them) while the text does not parse.
  void setParseError(const QString& error);

 signals:
  /// The user changed a field; `value_json` is "" to remove the key.
  void fieldEdited(const QString& path, const QString& value_json);

 private:
  void showPrecision(QComboBox* combo, const QString& mode);

  QHash<QString, QWidget*> widgets_;
  QString precision_tooltip_;
  QLabel* error_ = nullptr;
  bool updating_ = false;
};

}  // namespace shardscope::gui
