#pragma once
// Reading files of a checkpoint folder safely. A checkpoint may come from anyone, so every read
// is bounded by the file's own size, taken once from fstat: a FIFO, a device (/dev/zero), a
// socket or a directory is refused by its type before a byte is read (opening uses O_NONBLOCK,
// so even a FIFO without a writer cannot hang the open), and a file that shrinks while it is
// read is reported as truncated instead of being read past its end.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::checkpoints {

class RegularFile {
 public:
  /// Opens `path` for reading; throws CheckpointError (unreadable) naming it when it does not
  /// exist, cannot be opened, or is not a regular file (saying what it is instead).
  explicit RegularFile(const std::string& path);
  ~RegularFile();
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  const std::string& path() const { return path_; }
  /// The size fstat gave when the file was opened.
  std::uint64_t size() const { return size_; }
  /// Reads exactly `count` bytes at `offset` into `out`; throws CheckpointError (damaged) when
  /// the range lies beyond the file's size or the file ends early.
  void read_at(std::uint64_t offset, std::size_t count, void* out) const;
  /// The whole file; throws CheckpointError when it is larger than `cap` bytes.
  std::vector<char> read_all(std::uint64_t cap) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// What a non-regular path is ("a directory", "a FIFO", "a character device", ...), "" for a
/// regular file or one that does not exist; symbolic links are followed.
std::string non_regular_kind(const std::string& path);

/// " (a symbolic link to TARGET)" when `path` is a symbolic link, else "": for messages about
/// files a link made look as if they were part of the checkpoint.
std::string link_note(const std::string& path);

/// Text for a message: at most `max_chars` characters of `text`, control and non-ASCII bytes
/// written as \xNN, and "... (N bytes)" when it was cut. A file's content is never echoed raw.
std::string printable(const std::string& text, std::size_t max_chars = 80);

}  // namespace shardscope::checkpoints
