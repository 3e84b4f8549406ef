#pragma once
// Helpers shared by the libFuzzer targets of this folder (tests/fuzz/CMakeLists.txt).
// Readers that take a path get the input through an in-memory file (memfd), so a run of millions
// of inputs touches no disk.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace shardscope::fuzz {

/// One anonymous in-memory file, rewritten with each input; path() opens it like any file.
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("shardscope-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
  }
  ~MemoryFile() { ::close(fd_); }

  /// Replaces the file's bytes with `data`.
  void write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size)) {
      std::perror("memfd write");
      std::abort();
    }
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

/// Ends the run the way a sanitizer report does, for an invariant the target checks itself.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "shardscope fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

}  // namespace shardscope::fuzz
