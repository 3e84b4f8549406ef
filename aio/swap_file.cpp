#include "aio/swap_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "aio/aligned_buffer.hpp"
#include "aio/io_error.hpp"

namespace shardscope::aio {

SwapFile::SwapFile(std::string path, std::int64_t bytes, bool direct, const std::string& owner) {
  target_.path = std::move(path);
  target_.direct = direct;
  size_ = io_aligned(bytes);
  const int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0);
  target_.fd = ::open(target_.path.c_str(), flags, 0600);
  if (target_.fd < 0) throw make_io_error(owner, "cannot create swap file", target_.path, errno);
  // Reserve every block now. Where the file system has no fallocate, the size is set instead and
  // space is taken as the first write lands.
  int rc;
  do rc = ::fallocate(target_.fd, 0, 0, size_);
  while (rc != 0 && errno == EINTR);
  if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) rc = ::ftruncate(target_.fd, size_);
  if (rc != 0) {
    const int error = errno;
    close_and_remove();
    throw make_io_error(owner, "cannot reserve " + format_bytes(static_cast<double>(size_)) + " for swap file",
                        target_.path, error);
  }
}

SwapFile::~SwapFile() { close_and_remove(); }

SwapFile::SwapFile(SwapFile&& other) noexcept
    : target_(std::exchange(other.target_, IoTarget{})), size_(std::exchange(other.size_, 0)) {}

SwapFile& SwapFile::operator=(SwapFile&& other) noexcept {
  if (this != &other) {
    close_and_remove();
    target_ = std::exchange(other.target_, IoTarget{});
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void SwapFile::close_and_remove() {
  if (target_.fd < 0) return;
  ::close(target_.fd);
  ::unlink(target_.path.c_str());
  target_.fd = -1;
}

}  // namespace shardscope::aio
