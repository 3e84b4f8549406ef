#pragma once
// Editing one value of a config file in place. A form that re-serialised the whole document would
// expand compact objects, respell numbers (3e-4 -> 0.0003) and drop the `//` comments DeepSpeed's
// hjson reader allows; these functions instead patch the text span of the one value (or member)
// being set, inserted or removed, so every other byte of the file stays as the user wrote it.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace shardscope::configs {

/// One replacement in a text: the bytes [begin, end) become `text` (begin == end inserts).
struct TextEdit {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string text;
  bool empty() const { return begin == end && text.empty(); }
};

/// A value cannot be set: the document does not parse, a key on the path holds no object, or the
/// new value is not one JSON value. The message says which and how to fix it.
class ConfigEditError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The edit that sets the member at dotted `path` ("zero_optimization.offload_optimizer.device")
/// to `value_json` (one JSON value as text, kept as spelled: "3e-4", "true", "\"cpu\""), or removes
/// it when `value_json` is nullopt. An existing value is replaced in place; a missing member is
/// added after the last member of the deepest existing object (missing objects on the way are
/// written inline, `"offload_optimizer": {"device": "cpu"}`) in the object's own layout (one member
/// per line with the siblings' indentation, or inline); a removed member takes its comma, and its
/// line when it was alone on it. Removing an absent member is an empty edit. Blank text counts as
/// `{}`. Throws ConfigEditError (see above).
TextEdit plan_value_edit(const std::string& text, const std::string& path, const std::optional<std::string>& value_json);

/// `text` with `edit` applied.
std::string apply_text_edit(const std::string& text, const TextEdit& edit);

/// plan_value_edit then apply_text_edit.
std::string set_config_value(const std::string& text, const std::string& path,
                             const std::optional<std::string>& value_json);

}  // namespace shardscope::configs
