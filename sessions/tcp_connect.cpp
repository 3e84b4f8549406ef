#include "sessions/tcp_connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "sessions/errors.hpp"

namespace shardscope::sessions {
namespace {

// poll() for POLLOUT within `timeout_ms` in all, resumed after a signal (a profiler's timer, a
// child's SIGCHLD): an interrupted wait is not a refused connection.
int poll_writable(int fd, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLOUT, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left)));
    if (rc >= 0 || errno != EINTR) return rc;
  }
}

}  // namespace

int connect_tcp(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    throw SessionsError(ErrorKind::kUnreachable, std::string("cannot resolve host: ") + gai_strerror(rc));
  std::string cause = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      rc = poll_writable(fd, timeout_ms);
      if (rc == 0) {
        errno = ETIMEDOUT;
        rc = -1;
      } else if (rc > 0) {
        int error = 0;
        socklen_t len = sizeof error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        errno = error;
        rc = error == 0 ? 0 : -1;
      }
    }
    if (rc == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      ::freeaddrinfo(found);
      return fd;
    }
    cause = errno == ETIMEDOUT ? "timed out after " + std::to_string(timeout_ms) + " ms" : std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw SessionsError(ErrorKind::kUnreachable, cause);
}

}  // namespace shardscope::sessions
