#pragma once
// The checkpoint directory around the tags: `latest` (read bounded, refused when it is not a
// regular file or names a folder outside DIR), the tags (sub-folders holding a model-states file)
// and the temporary files an interrupted write leaves behind.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::checkpoints {

/// Whether `tag` is a tag name that stays inside the checkpoint directory: one path component,
/// not "." or "..", at most 255 bytes, no control characters. `why` gets the reason when not.
bool is_valid_tag(const std::string& tag, std::string* why = nullptr);

/// The tag dir/latest names (trimmed, as DeepSpeed strips it), nullopt when there is no latest
/// file. Throws CheckpointError (unreadable) naming the file when it is not a regular file (a
/// FIFO, /dev/zero through a link), is larger than a tag can be (its content is not echoed), or
/// names a folder outside DIR.
std::optional<std::string> read_latest_tag(const std::string& dir);

/// The tag folders of `dir` (real sub-folders holding a model-states file, or the temporaries of
/// an interrupted save's files), sorted.
std::vector<std::string> checkpoint_tags(const std::string& dir);

/// The temporary files ("<name>.tmp.<pid>") in `folder`, with their sizes.
std::vector<std::pair<std::string, std::uint64_t>> leftover_temporaries(const std::string& folder);

/// Removes the temporary files of `folder` whose final name `keep_removing(final_name)` accepts;
/// returns the names removed.
template <typename Predicate>
std::vector<std::string> remove_leftover_temporaries(const std::string& folder, Predicate keep_removing);

/// Removes one temporary file, ignoring one that is gone already.
void remove_file_quietly(const std::string& path);

template <typename Predicate>
std::vector<std::string> remove_leftover_temporaries(const std::string& folder, Predicate accept) {
  std::vector<std::string> removed;
  for (const auto& [name, bytes] : leftover_temporaries(folder)) {
    const auto at = name.rfind(".tmp.");
    if (!accept(name.substr(0, at))) continue;
    remove_file_quietly(folder + "/" + name);
    removed.push_back(name);
  }
  return removed;
}

}  // namespace shardscope::checkpoints
