#include "sessions/atomic_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "configs/input_file.hpp"
#include "sessions/errors.hpp"

namespace shardscope::sessions {
namespace {

[[noreturn]] void fail_io(const std::string& what, const std::string& path) {
  throw StoreError(ErrorKind::kStorage, "cannot " + what + " " + path + ": " + std::strerror(errno));
}

void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    fail_io("flush", path);
  }
  ::close(fd);
}

void sync_directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);  // makes the rename itself durable
    ::close(fd);
  }
}

}  // namespace

void require_replaceable_output(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  throw StoreError(ErrorKind::kInvalidArgument,
                   path + " exists and is " + configs::file_type_name(st.st_mode) +
                       "; an export replaces only a regular file: remove it or choose another path");
}

AtomicOutput::AtomicOutput(const std::string& path) : path_(path) {
  require_replaceable_output(path);
  std::vector<char> name(path.begin(), path.end());
  for (char c : std::string(".tmp-XXXXXX")) name.push_back(c);
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail_io("create a temporary file beside", path);
  ::close(fd);
  temporary_ = name.data();
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    ::unlink(temporary_.c_str());
    fail_io("write", temporary_);
  }
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) ::unlink(temporary_.c_str());  // never leave a half export behind
}

void AtomicOutput::commit() {
  out_.close();
  if (!out_) fail_io("write", temporary_);
  sync_file(temporary_);
  require_replaceable_output(path_);  // again: it may have been replaced while we wrote
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) fail_io("rename the export onto", path_);
  committed_ = true;
  sync_directory_of(path_);
}

}  // namespace shardscope::sessions
