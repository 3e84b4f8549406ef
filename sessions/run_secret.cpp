#include "sessions/run_secret.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sessions/errors.hpp"
#include "sessions/sha256.hpp"

namespace shardscope::sessions {
namespace {

constexpr std::size_t kMaxSecretFileBytes = 4096;

SessionsError bad_file(const std::string& path, const std::string& what) {
  return SessionsError(ErrorKind::kInvalidArgument, "secret file " + path + ": " + what);
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

std::string random_bytes(std::size_t count) {
  std::string bytes(count, '\0');
  std::size_t filled = 0;
  while (filled < count) {
    const ssize_t n = ::getrandom(bytes.data() + filled, count - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw SessionsError(ErrorKind::kStorage, std::string("getrandom failed: ") + std::strerror(errno));
    filled += static_cast<std::size_t>(n);
  }
  return bytes;
}

std::string hex_encode(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) {
    text.push_back(kHex[byte >> 4]);
    text.push_back(kHex[byte & 15]);
  }
  return text;
}

std::string new_run_secret() { return hex_encode(random_bytes(32)); }

std::string read_secret_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) throw bad_file(path, std::string("cannot open it: ") + std::strerror(errno));
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) throw bad_file(path, std::string("cannot stat it: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw bad_file(path, "is not a regular file; give a file holding the secret");
    if (st.st_uid != ::geteuid())
      throw bad_file(path, "belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                               std::to_string(::geteuid()) + "); a secret must be this user's own file");
    if (st.st_mode & 077)
      throw bad_file(path, "has mode " + octal_mode(st.st_mode) +
                               ", so other users can read it; make it private with chmod 600 " + path);
    if (st.st_size > static_cast<off_t>(kMaxSecretFileBytes))
      throw bad_file(path, "is " + std::to_string(st.st_size) + " bytes; a secret file holds one line (at most " +
                               std::to_string(kMaxSecretFileBytes) + " bytes)");
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
    text.pop_back();
  if (text.size() < kMinSecretChars)
    throw bad_file(path, "holds " + std::to_string(text.size()) + " characters; a secret needs at least " +
                             std::to_string(kMinSecretChars) +
                             " (make one with: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > " + path + ")");
  return text;
}

std::string rank_key(std::string_view secret, int rank) {
  static constexpr std::string_view kLabel{"shardscope rank key v1\0", 23};
  HmacSha256 mac(secret);
  mac.update(kLabel);
  const std::int32_t id = rank;
  mac.update(&id, sizeof id);
  const Sha256Digest digest = mac.finish();
  return hex_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string read_key_from_descriptor(int fd) {
  std::string key;
  char buffer[512];
  while (key.size() <= kMaxSecretFileBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw SessionsError(ErrorKind::kInvalidArgument, std::string(kCollectorKeyFdVariable) + "=" +
                                                           std::to_string(fd) + ": cannot read the rank's key: " +
                                                           std::strerror(error) + "; start ranks with `shardscope launch`");
    }
    if (n == 0) break;
    key.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ' || key.back() == '\t'))
    key.pop_back();
  return key;
}

std::optional<std::string> take_secret_from_environment() {
  if (const char* fd_text = std::getenv(kCollectorKeyFdVariable)) {
    char* end = nullptr;
    const long fd = std::strtol(fd_text, &end, 10);
    const bool valid = *fd_text && *end == '\0' && fd >= 0 && fd < 65536;
    const std::string text = fd_text;
    ::unsetenv(kCollectorKeyFdVariable);
    ::unsetenv(kCollectorSecretVariable);
    if (!valid)
      throw SessionsError(ErrorKind::kInvalidArgument, std::string(kCollectorKeyFdVariable) + "=" + text +
                                                           " is not a descriptor number");
    std::string key = read_key_from_descriptor(static_cast<int>(fd));
    if (key.empty()) return std::nullopt;
    return key;
  }
  const char* value = std::getenv(kCollectorSecretVariable);
  if (!value || !*value) return std::nullopt;
  std::string secret = value;
  ::unsetenv(kCollectorSecretVariable);
  return secret;
}

}  // namespace shardscope::sessions
