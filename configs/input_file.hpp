#pragma once
// The one checked way every reader of a user-given file opens it (config files, Hugging Face
// config.json, safetensors headers and indexes, token files, session stores). A path that is not
// a regular file (a directory, a FIFO, a device, a socket) is refused by its type before a byte is
// read, so `validate /dev/zero` or a FIFO given as --db fails at once instead of growing or
// blocking forever; a read stops at the file's own size or at a documented cap
// (docs/reliability.md, "Bounded readers").

#include <cstdint>
#include <stdexcept>
#include <string>

namespace shardscope::configs {

/// An input file that cannot be read: missing, unreadable, of the wrong type, or above its cap.
/// The message names the file, what is wrong and the remedy; front ends exit 2 for it.
class InputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Caps of the readers that read a whole file into memory, all far above any real file.
inline constexpr std::uint64_t kMaxConfigFileBytes = 16ull << 20;     ///< ds_config.json, config.json
inline constexpr std::uint64_t kMaxIndexFileBytes = 100ull << 20;     ///< model.safetensors.index.json

/// An open, read-only descriptor of a regular file; closes itself.
class InputFile {
 public:
  /// Opens `path` without blocking (O_NONBLOCK, so a FIFO cannot hang the open) and refuses
  /// anything but a regular file, naming `what` ("config file", "token file") in the message.
  InputFile(const std::string& path, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  /// The size fstat reported at open.
  std::uint64_t size() const { return size_; }
  /// Reads bytes [offset, offset + count); InputFileError if the file ends first.
  std::string read_at(std::uint64_t offset, std::uint64_t count) const;
  /// The whole file, refused (before reading) when larger than `max_bytes`.
  std::string read_all(std::uint64_t max_bytes) const;

 private:
  std::string path_;
  std::string what_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// "a directory", "a FIFO (named pipe)", "a character device", "a symbolic link", ... for an
/// st_mode that is not a regular file's; "" for a regular file.
std::string file_type_name(unsigned mode);

/// What `path` is when it is not a regular file ("a directory", "a FIFO (named pipe)", ...), or
/// "" for a regular file or a path that does not exist. Follows symlinks, as an open would.
std::string non_regular_file_kind(const std::string& path);

/// Throws InputFileError when `path` exists and is not a regular file; for readers that hand the
/// path to another library (SQLite) instead of opening it themselves.
void require_regular_file_if_present(const std::string& path, const std::string& what);

/// The whole of `path` (a regular file of at most `max_bytes`); InputFileError otherwise.
std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

}  // namespace shardscope::configs
