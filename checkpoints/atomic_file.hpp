#pragma once
// Writing checkpoint files so that a crash (kill -9 included) never leaves half of one: bytes go
// to "<path>.tmp.<pid>" in the same folder, which is fsynced, renamed onto <path>, and the
// folder fsynced so the rename itself survives a power loss. The writer counts the bytes and
// their CRC-32 as they pass, which is what the tag's manifest records. A writer destroyed
// before commit() removes its temporary file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::checkpoints {

class AtomicFile {
 public:
  /// Creates the temporary file beside `path` (creating the folder); throws CheckpointError.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  /// Bytes written so far, and their CRC-32.
  std::uint64_t size() const { return size_; }
  std::uint32_t crc32() const { return crc_; }
  /// fsync, rename onto the final path, fsync the folder.
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_; }

 private:
  std::string temp_name() const;
  std::string path_, temp_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint32_t crc_ = 0;
  bool committed_ = false;
};

/// Writes `bytes` to `path` atomically (AtomicFile in one call).
void write_file_atomically(const std::string& path, const std::vector<char>& bytes);

/// fsyncs a folder so that renames and removals in it are durable.
void sync_folder(const std::string& folder);

/// Whether `name` is one of AtomicFile's temporary names ("<final>.tmp.<digits>"); `final_name`
/// gets the name it would have been renamed to.
bool is_temporary_name(const std::string& name, std::string* final_name = nullptr);

}  // namespace shardscope::checkpoints
