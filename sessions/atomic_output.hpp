#pragma once
// A file written whole or not at all, that never clobbers what is not a regular file. The target
// path, when it exists, must be a regular file (not a symlink, FIFO, device, socket or directory:
// renaming onto one of those would replace a link the user keeps, or, as root, a device node).
// The bytes go to a fresh temporary file beside it (mkstemp: created exclusively, mode 0600), are
// flushed to disk, and the temporary is renamed onto the target; on any failure it is removed.

#include <fstream>
#include <string>

namespace shardscope::sessions {

class AtomicOutput {
 public:
  /// Checks `path` and creates the temporary; throws StoreError (kInvalidArgument for a path that
  /// is not a regular file, kStorage for an I/O failure) naming the path and the remedy.
  explicit AtomicOutput(const std::string& path);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  std::ostream& stream() { return out_; }
  /// Flushes, syncs and renames onto the target; the file is complete once this returns.
  void commit();

 private:
  std::string path_;
  std::string temporary_;
  std::ofstream out_;
  bool committed_ = false;
};

/// Throws StoreError(kInvalidArgument) when `path` exists and is not a regular file (checked with
/// lstat, so a symlink is refused rather than followed).
void require_replaceable_output(const std::string& path);

}  // namespace shardscope::sessions
