#include "sessions/net_address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace shardscope::sessions {
namespace {

using AddrInfoPtr = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;

AddrInfoPtr resolve_numeric(const std::string& host, int port, int socktype) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return AddrInfoPtr(nullptr, ::freeaddrinfo);
  return AddrInfoPtr(found, ::freeaddrinfo);
}

std::string numeric_host(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST] = "";
  ::getnameinfo(address, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

}  // namespace

std::string local_address_toward(const std::string& remote) {
  const auto found = resolve_numeric(remote, 9, SOCK_DGRAM);
  if (!found)
    throw NoRouteError("the address " + remote + " does not resolve; give a numeric address or a name this machine resolves");
  std::string cause = "no address";
  for (const addrinfo* a = found.get(); a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      sockaddr_storage local{};
      socklen_t length = sizeof local;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
      ::close(fd);
      return numeric_host(reinterpret_cast<sockaddr*>(&local), length);
    }
    cause = std::strerror(errno);
    ::close(fd);
  }
  throw NoRouteError("no route from this machine to " + remote + " (" + cause + ")");
}

int bind_listener(const std::string& address, int port, int backlog) {
  const auto found = resolve_numeric(address, port, SOCK_STREAM);
  if (!found) {
    errno = EADDRNOTAVAIL;
    return -1;
  }
  int error = EADDRNOTAVAIL;
  for (const addrinfo* a = found.get(); a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) return fd;
    error = errno;
    ::close(fd);
  }
  errno = error;
  return -1;
}

int bound_port(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

bool is_local_address(const std::string& address) {
  const auto found = resolve_numeric(address, 9, SOCK_STREAM);
  if (!found) return false;
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return false;
  bool local = false;
  for (const addrinfo* a = found.get(); a && !local; a = a->ai_next) {
    const std::string wanted = numeric_host(a->ai_addr, a->ai_addrlen);
    for (const ifaddrs* i = interfaces; i && !local; i = i->ifa_next) {
      if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
      const socklen_t length = i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      local = numeric_host(i->ifa_addr, length) == wanted;
    }
  }
  ::freeifaddrs(interfaces);
  return local;
}

std::vector<std::string> host_addresses() {
  std::vector<std::string> addresses;
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return addresses;
  for (const ifaddrs* i = interfaces; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      continue;
    if (family != AF_INET && family != AF_INET6) continue;
    addresses.push_back(numeric_host(i->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)));
  }
  ::freeifaddrs(interfaces);
  return addresses;
}

}  // namespace shardscope::sessions
