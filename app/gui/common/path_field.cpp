#include "app/gui/common/path_field.hpp"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>

namespace shardscope::gui {

QLineEdit* make_path_field(QWidget* dialog_parent, PathKind kind, const QString& tooltip, const QString& filter,
                           QWidget** row) {
  auto* field = new QLineEdit;
  field->setToolTip(tooltip);
  field->setClearButtonEnabled(true);
  auto* browse = new QPushButton(QObject::tr("Browse\u2026"));
  QObject::connect(browse, &QPushButton::clicked, field, [dialog_parent, field, kind, filter] {
    QString path;
    switch (kind) {
      case PathKind::kOpenFile:
        path = QFileDialog::getOpenFileName(dialog_parent, QObject::tr("Choose a file"), field->text(), filter);
        break;
      case PathKind::kSaveFile:
        path = QFileDialog::getSaveFileName(dialog_parent, QObject::tr("Choose a file"), field->text(), filter, nullptr,
                                            QFileDialog::DontConfirmOverwrite);
        break;
      case PathKind::kFolder:
        path = QFileDialog::getExistingDirectory(dialog_parent, QObject::tr("Choose a folder"), field->text());
        break;
    }
    if (!path.isEmpty()) field->setText(path);
  });
  *row = new QWidget;
  auto* layout = new QHBoxLayout(*row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(field, 1);
  layout->addWidget(browse);
  return field;
}

}  // namespace shardscope::gui
