#include "aio/io_error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardscope::aio {
namespace {

const char* errno_name(int error) {
  switch (error) {
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EIO: return "EIO";
    case EFBIG: return "EFBIG";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EMFILE: return "EMFILE";
    case ENOSYS: return "ENOSYS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return nullptr;
  }
}

}  // namespace

std::string describe_errno(int error) {
  std::string text = std::strerror(error);
  if (const char* name = errno_name(error)) text += std::string(" (") + name + ")";
  return text;
}

IoError make_io_error(const std::string& owner, const std::string& what, const std::string& path, int error,
                      const std::string& detail) {
  std::string message = owner.empty() ? std::string() : owner + ": ";
  message += what + " '" + path + "'" + (detail.empty() ? "" : " " + detail);
  if (error != 0) message += ": " + describe_errno(error);
  return IoError(message, error);
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes < 1024.0)
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  else if (bytes < 1024.0 * 1024.0)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  else if (bytes < 1024.0 * 1024.0 * 1024.0)
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  else
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace shardscope::aio
