#include "checkpoints/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/crc32.hpp"

namespace shardscope::checkpoints {
namespace {

constexpr const char* kTempInfix = ".tmp.";

CheckpointError io_error(const std::string& file, const std::string& what, int error = errno) {
  return unreadable(file, what + " (" + std::strerror(error) + ")");
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const std::filesystem::path target(path_);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) throw unreadable(target.parent_path().string(), "cannot be created (" + ec.message() + ")");
  temp_ = path_ + kTempInfix + std::to_string(::getpid());
  ::unlink(temp_.c_str());  // a leftover of an earlier process with the same pid
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error(temp_, "cannot be created");
}

// Errors name the file the user asked for; the temporary is said too, in case it is left.
std::string AtomicFile::temp_name() const { return std::filesystem::path(temp_).filename().string(); }

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      throw io_error(path_, "cannot be written through its temporary " + temp_name(), error);
    }
    done += static_cast<std::size_t>(n);
  }
  crc_ = crc32_update(crc_, data, size);
  size_ += size;
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) {
    const int error = errno;
    throw io_error(path_, "cannot be flushed to disk through its temporary " + temp_name(), error);
  }
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) {
    const int error = errno;
    throw io_error(path_, "cannot be closed through its temporary " + temp_name(), error);
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) throw io_error(path_, "cannot be put in place");
  committed_ = true;
  const std::filesystem::path target(path_);
  sync_folder(target.has_parent_path() ? target.parent_path().string() : ".");
}

void write_file_atomically(const std::string& path, const std::vector<char>& bytes) {
  AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the file itself is durable; a folder we cannot open cannot be synced
  ::fsync(fd);
  ::close(fd);
}

bool is_temporary_name(const std::string& name, std::string* final_name) {
  const auto at = name.rfind(kTempInfix);
  if (at == std::string::npos || at == 0) return false;
  const std::string digits = name.substr(at + std::strlen(kTempInfix));
  if (digits.empty() || digits.size() > 10) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  if (final_name) *final_name = name.substr(0, at);
  return true;
}

}  // namespace shardscope::checkpoints
