#include "app/gui/common/wheel_guard.hpp"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>
#include <QObject>
#include <QWidget>

namespace shardscope::gui {
namespace {

class UnfocusedWheelFilter : public QObject {
 public:
  using QObject::QObject;

  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::Wheel) return false;
    auto* field = qobject_cast<QWidget*>(watched);
    if (!field || field->hasFocus()) return false;
    event->ignore();  // not for this field: Qt hands an ignored wheel event on to the scroll area
    return true;
  }
};

}  // namespace

void scroll_wheel_past_unfocused_fields(QWidget* form) {
  auto* filter = new UnfocusedWheelFilter(form);
  const auto guard = [filter](QWidget* field) {
    field->setFocusPolicy(Qt::StrongFocus);  // focus by click or Tab, not by the wheel
    field->installEventFilter(filter);
  };
  for (auto* box : form->findChildren<QAbstractSpinBox*>()) guard(box);
  for (auto* box : form->findChildren<QComboBox*>()) guard(box);
}

}  // namespace shardscope::gui
