#pragma once
// The window's keyboard shortcuts, spelt out: Qt's standard keys (QKeySequence::SaveAs, Refresh,
// Redo) come from the desktop's theme and are empty or different outside GNOME and KDE (Save As
// had no key under openbox), so every action sets these sequences itself. Help > Keyboard
// shortcuts lists this table; gui_main_window_test presses each one and checks docs/gui.md names
// no key that is not here.

#include <vector>

#include <QKeySequence>
#include <QString>

class QDialog;
class QWidget;

namespace shardscope::gui {

struct KeyboardShortcut {
  QKeySequence keys;
  QString action;
  QString where;  ///< the page it works on, or "window"
};

/// Every shortcut the window has, in the order Help lists them.
const std::vector<KeyboardShortcut>& keyboard_shortcuts();

/// The keys of the shortcut named `action` in the table (empty if none): the actions take theirs from here.
QList<QKeySequence> shortcut_keys(const QString& action);

/// Help > Keyboard shortcuts: the table in a dialog (not modal; one per call).
QDialog* make_shortcuts_dialog(QWidget* parent);

}  // namespace shardscope::gui
