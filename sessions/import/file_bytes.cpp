#include "sessions/import/file_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {
namespace {

class Descriptor {
 public:
  explicit Descriptor(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw ImportError(path + ": cannot open: " + std::strerror(errno));
  }
  ~Descriptor() { ::close(fd_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Reads up to `size` bytes at `offset`; fewer only at the end of the file.
std::string read_at(const Descriptor& file, const std::string& path, std::uint64_t offset, std::size_t size) {
  std::string out(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(file.fd(), out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ImportError(path + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

}  // namespace

std::string read_file_bytes(const std::string& path, std::size_t max_bytes) {
  Descriptor file(path);
  struct stat info {};
  if (::fstat(file.fd(), &info) != 0) throw ImportError(path + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) throw ImportError(path + ": is a folder, expected a file");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes)
    throw ImportError(path + ": " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                      " this importer reads; split or trim the file");
  return read_at(file, path, 0, static_cast<std::size_t>(size));
}

std::string read_file_from(const std::string& path, std::uint64_t offset, std::size_t max_bytes) {
  Descriptor file(path);
  return read_at(file, path, offset, max_bytes);
}

}  // namespace shardscope::sessions
