#pragma once
// What a file given to the app is (on its command line, or dropped on the window), so it opens on
// the page that reads it: a session store on Sessions & Compare, a DeepSpeed config in the Config
// Editor, a Hugging Face config.json or safetensors checkpoint on the Estimator.

#include <QString>

namespace shardscope::gui {

enum class FileKind { kSessionStore, kDeepSpeedConfig, kHfConfig, kSafetensors, kUnknown };

/// Reads the start of `path` (an SQLite header, a JSON object with or without "model_type", a
/// safetensors name); kUnknown with `error` saying why (missing, unreadable, neither).
FileKind classify_file(const QString& path, QString* error);

}  // namespace shardscope::gui
