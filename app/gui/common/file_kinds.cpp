#include "app/gui/common/file_kinds.hpp"

#include <QFile>
#include <QFileInfo>

namespace shardscope::gui {

FileKind classify_file(const QString& path, QString* error) {
  const QFileInfo info(path);
  auto fail = [&](const QString& why) {
    if (error) *error = QObject::tr("%1: %2").arg(path, why);
    return FileKind::kUnknown;
  };
  if (!info.exists()) return fail(QObject::tr("no such file"));
  if (info.isDir()) return fail(QObject::tr("is a folder; give a session file (.db), a config (.json) or a checkpoint"));
  if (path.endsWith(".safetensors") || path.endsWith(".safetensors.index.json")) return FileKind::kSafetensors;
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return fail(file.errorString());
  const QByteArray head = file.read(1 << 20);
  // Every SQLite 3 database starts with this 16-byte string (sqlite.org/fileformat.html).
  if (head.startsWith(QByteArray("SQLite format 3\0", 16))) return FileKind::kSessionStore;
  const QByteArray text = head.trimmed();
  if (text.startsWith('{') || text.startsWith("//") || text.startsWith('#') || path.endsWith(".json") ||
      path.endsWith(".hjson"))
    return head.contains("\"model_type\"") ? FileKind::kHfConfig : FileKind::kDeepSpeedConfig;
  return fail(QObject::tr("neither a session file (SQLite) nor a JSON config"));
}

}  // namespace shardscope::gui
