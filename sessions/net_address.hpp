#pragma once
// The addresses a run uses: which of this machine's addresses faces a peer, listening sockets
// bound to exactly one address (never to every interface), and this machine's own addresses.

#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::sessions {

/// No address of this machine leads to a peer: the name does not resolve, or no route goes there.
class NoRouteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The numeric address of this machine that traffic to `remote` leaves from (the routing table's
/// choice, found with a connected UDP socket; nothing is sent). Throws NoRouteError
/// naming `remote` when it does not resolve or no route leads there.
std::string local_address_toward(const std::string& remote);

/// A TCP socket bound to `address`:`port` (SO_REUSEADDR, close-on-exec) and listening, or -1 with
/// errno set. Port 0 binds a free port.
int bind_listener(const std::string& address, int port, int backlog = 1024);

/// The port a bound socket has.
int bound_port(int fd);

/// Whether `address` (a name or a numeric address) resolves to an address of this machine.
bool is_local_address(const std::string& address);

/// This machine's addresses as `hostname -I` lists them: every configured address but loopback and
/// IPv6 link-local ones, in interface order (DeepSpeed takes the first as MASTER_ADDR).
std::vector<std::string> host_addresses();

}  // namespace shardscope::sessions
