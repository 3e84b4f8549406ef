#include "configs/input_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace shardscope::configs {
namespace {

std::string open_failure(const std::string& path, const std::string& what, int error) {
  if (error == ENOENT || error == ENOTDIR) return path + ": no such file (check the path of the " + what + ")";
  if (error == EACCES || error == EPERM)
    return path + ": permission denied reading the " + what + " (make it readable, e.g. chmod u+r)";
  return path + ": cannot open the " + what + " (" + std::strerror(error) + ")";
}

std::string wrong_type(const std::string& path, const std::string& what, const std::string& kind) {
  return path + ": is " + kind + ", not a " + what + "; give the path of a regular file";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes < 1000000) return std::to_string(bytes) + " bytes";
  return std::to_string(bytes / 1000000) + "." + std::to_string(bytes / 100000 % 10) + " MB";
}

}  // namespace

std::string file_type_name(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw InputFileError(open_failure(path, what, errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw InputFileError(open_failure(path, what, error));
  }
  const std::string kind = file_type_name(st.st_mode);
  if (!kind.empty()) {
    ::close(fd_);
    throw InputFileError(wrong_type(path, what, kind));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_at(std::uint64_t offset, std::uint64_t count) const {
  std::string bytes(count, '\0');
  std::uint64_t done = 0;
  while (done < count) {
    const ssize_t n = ::pread(fd_, bytes.data() + done, count - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputFileError(path_ + ": read error in the " + what_ + " (" + std::strerror(errno) + ")");
    if (n == 0)
      throw InputFileError(path_ + ": the " + what_ + " ended at byte " + std::to_string(offset + done) +
                           " while " + std::to_string(offset + count) + " were expected (was it truncated?)");
    done += static_cast<std::uint64_t>(n);
  }
  return bytes;
}

std::string InputFile::read_all(std::uint64_t max_bytes) const {
  if (size_ > max_bytes)
    throw InputFileError(path_ + ": " + size_text(size_) + " is more than a " + what_ + " may hold (" +
                         size_text(max_bytes) + ", docs/reliability.md); is this the right file?");
  return read_at(0, size_);
}

std::string non_regular_file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return file_type_name(st.st_mode);
}

void require_regular_file_if_present(const std::string& path, const std::string& what) {
  const std::string kind = non_regular_file_kind(path);
  if (!kind.empty()) throw InputFileError(wrong_type(path, what, kind));
}

std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  return InputFile(path, what).read_all(max_bytes);
}

}  // namespace shardscope::configs
