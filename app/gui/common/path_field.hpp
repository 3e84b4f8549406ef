#pragma once
// A file or folder field as the pages have them: a line edit with a "Browse..." button beside it
// that opens the matching dialog on the field's current text.

#include <QString>

class QLineEdit;
class QWidget;

namespace shardscope::gui {

enum class PathKind { kOpenFile, kSaveFile, kFolder };

/// The field; `*row` is the widget holding it and its button, for a form row. `filter` is the
/// dialog's name filter (files only). A save dialog does not ask before overwriting: a session file
/// is added to, never replaced.
QLineEdit* make_path_field(QWidget* dialog_parent, PathKind kind, const QString& tooltip, const QString& filter,
                           QWidget** row);

}  // namespace shardscope::gui
