#pragma once
// Forms in scroll areas: a wheel turned to scroll the form must not change the spin box or combo
// box that happens to pass under the pointer. Those fields take the wheel only once focused (a
// click or Tab); until then it scrolls the form.

class QWidget;

namespace shardscope::gui {

/// Applies that to every spin box and combo box under `form` (built before the call).
void scroll_wheel_past_unfocused_fields(QWidget* form);

}  // namespace shardscope::gui
