#pragma once
// Helpers for tests that start processes or talk TCP (launcher, CLI, collector): a free or a busy
// loopback port, and whether a process has gone.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace shardscope::test {

/// A TCP socket of the loopback interface on a port the kernel picked; with `listen`, a port that
/// stays busy until close() or destruction. Throws std::runtime_error when the kernel refuses.
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listen) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        (listen && ::listen(fd_, 1) != 0))
      throw std::runtime_error("cannot bind a loopback test socket");
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~LoopbackSocket() { close(); }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;

  int port() const { return port_; }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  int port_ = 0;
};

/// A TCP port of the loopback interface that was free a moment ago (the kernel picks it).
inline int free_port() { return LoopbackSocket(/*listen=*/false).port(); }

/// Whether `pid` is gone: no such process, or a zombie nobody reaped yet. Waits up to `timeout`
/// for a signal to land.
inline bool process_gone(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const auto paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace shardscope::test
