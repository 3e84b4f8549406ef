#pragma once
// One swap file: created with its whole size reserved (fallocate), so a disk too small for the
// swapped state fails at the start of a run, naming the file, and never in the middle of one
// (rewrites of reserved blocks need no new space); opened for O_DIRECT I/O, or through the page
// cache on a file system that refuses O_DIRECT (ramfs, some FUSE and network file systems), as
// the folder's probe found. Closed and removed when destroyed.

#include <cstdint>
#include <string>

#include "aio/aio_handle.hpp"

namespace shardscope::aio {

class SwapFile {
 public:
  SwapFile() = default;
  /// Creates (or replaces) `path` with `bytes` reserved, rounded up to 4 KiB. Throws IoError naming
  /// `owner`, the path and the cause (No space left on device, Permission denied, ...).
  SwapFile(std::string path, std::int64_t bytes, bool direct, const std::string& owner);
  ~SwapFile();
  SwapFile(SwapFile&& other) noexcept;
  SwapFile& operator=(SwapFile&& other) noexcept;
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  /// What AioHandle reads and writes.
  const IoTarget& target() const { return target_; }
  const std::string& path() const { return target_.path; }
  /// Reserved bytes (a multiple of 4 KiB).
  std::int64_t size() const { return size_; }
  bool is_open() const { return target_.fd >= 0; }

 private:
  void close_and_remove();
  IoTarget target_;
  std::int64_t size_ = 0;
};

}  // namespace shardscope::aio
