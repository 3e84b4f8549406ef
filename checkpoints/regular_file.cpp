#include "checkpoints/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "checkpoints/checkpoint_error.hpp"
#include "configs/input_file.hpp"

namespace shardscope::checkpoints {
std::string non_regular_kind(const std::string& path) { return configs::non_regular_file_kind(path); }

std::string link_note(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return "";
  std::vector<char> target(4096);
  const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
  if (n < 0) return " (a symbolic link)";
  return " (a symbolic link to " + printable(std::string(target.data(), static_cast<std::size_t>(n)), 200) + ")";
}

std::string printable(const std::string& text, std::size_t max_chars) {
  std::string out;
  std::size_t shown = 0;
  for (unsigned char c : text) {
    if (shown == max_chars) break;
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
    ++shown;
  }
  if (shown < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

RegularFile::RegularFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENOENT) throw unreadable(path, "does not exist");
    throw unreadable(path, std::string("cannot be opened (") + std::strerror(err) + ")");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw unreadable(path, std::string("cannot be examined (") + std::strerror(err) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw unreadable(path, "is " + configs::file_type_name(st.st_mode) + ", not a regular file" + link_note(path));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

RegularFile::RegularFile(RegularFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

void RegularFile::read_at(std::uint64_t offset, std::size_t count, void* out) const {
  if (offset > size_ || count > size_ - offset)
    throw damaged(path_, "is truncated: needs bytes " + std::to_string(offset) + ".." + std::to_string(offset + count) +
                             " but holds " + std::to_string(size_));
  auto* p = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < count) {
    const ssize_t n = ::pread(fd_, p + done, count - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw damaged(path_, std::string("read failed (") + std::strerror(errno) + ")");
    if (n == 0) throw damaged(path_, "ended at byte " + std::to_string(offset + done) + " while being read (truncated?)");
    done += static_cast<std::size_t>(n);
  }
}

std::vector<char> RegularFile::read_all(std::uint64_t cap) const {
  if (size_ > cap)
    throw unreadable(path_, "holds " + std::to_string(size_) + " bytes, more than the " + std::to_string(cap) +
                                " such a file can have");
  std::vector<char> bytes(static_cast<std::size_t>(size_));
  read_at(0, bytes.size(), bytes.data());
  return bytes;
}

}  // namespace shardscope::checkpoints
