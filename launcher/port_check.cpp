#include "launcher/port_check.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "launcher/launch_error.hpp"

namespace shardscope::launcher {
namespace {

using AddrInfoPtr = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;

AddrInfoPtr resolve(const std::string& addr, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(addr.c_str(), service.c_str(), &hints, &result); rc != 0)
    throw LaunchError(LaunchError::Kind::kUsage,
                      "--master_addr " + addr + " does not resolve (" + ::gai_strerror(rc) + ")");
  return AddrInfoPtr(result, ::freeaddrinfo);
}

// 0 when bound, else the errno of bind().
int try_bind(const addrinfo& a) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return errno;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int error = ::bind(fd, a.ai_addr, a.ai_addrlen) == 0 ? 0 : errno;
  // listen() too: on Linux two SO_REUSEADDR sockets may both bind while neither listens.
  if (error == 0 && ::listen(fd, 1) != 0) error = errno;
  ::close(fd);
  return error;
}

}  // namespace

bool port_is_free(const std::string& addr, int port) {
  if (port <= 0 || port > 65535)
    throw LaunchError(LaunchError::Kind::kUsage, "--master_port " + std::to_string(port) + " is not a TCP port (1-65535)");
  const auto addresses = resolve(addr, port);
  int last_error = 0;
  for (const addrinfo* a = addresses.get(); a; a = a->ai_next) {
    last_error = try_bind(*a);
    if (last_error == 0) return true;
    if (last_error == EADDRINUSE) return false;
  }
  if (last_error == EACCES)
    throw LaunchError(LaunchError::Kind::kUsage, "--master_port " + std::to_string(port) +
                                                     ": this user may not listen on it (ports below 1024 need "
                                                     "privileges); pick a port above 1023, e.g. 29500");
  if (last_error == EADDRNOTAVAIL)
    throw LaunchError(LaunchError::Kind::kUsage,
                      "--master_addr " + addr + " is not an address of this machine, so rank 0 cannot listen there; "
                      "leave it out (127.0.0.1 is used for a local run) or give one of this machine's addresses");
  return last_error == 0;
}

void check_master_port_free(const std::string& master_addr, int port) {
  if (port_is_free(master_addr, port)) return;
  std::string suggestion;
  for (int candidate = port + 1; candidate <= 65535 && candidate <= port + 100; ++candidate)
    if (port_is_free(master_addr, candidate)) {
      suggestion = ", e.g. --master_port " + std::to_string(candidate) + " (free now)";
      break;
    }
  throw LaunchError(LaunchError::Kind::kEnvironment,
                    "MASTER_PORT " + std::to_string(port) + " on " + master_addr +
                        " is already in use (EADDRINUSE: address already in use): another training run, or one "
                        "that has not finished exiting, is listening there, so rank 0 could not start the "
                        "rendezvous store (torch would fail with \"The server socket has failed to listen on any "
                        "local network address. port: " + std::to_string(port) +
                        ", useIpv6: 0, code: -98, name: EADDRINUSE\"). Pick another port with --master_port" +
                        suggestion + ".");
}

}  // namespace shardscope::launcher
