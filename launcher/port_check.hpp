#pragma once
// The launcher's check that rank 0 will be able to listen on MASTER_PORT: c10d's TCPStore fails
// late and cryptically ("The server socket has failed to listen on any local network address.
// port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE") after every rank has started; a bind test
// before spawning names the port and the remedy instead.

#include <string>

namespace shardscope::launcher {

/// Whether a listener could bind addr:port now. SO_REUSEADDR is set as c10d's TCPStore sets it,
/// so a port held only by TIME_WAIT connections of a finished run counts as free.
/// Throws LaunchError(kUsage) when addr does not resolve or is not an address of this machine.
bool port_is_free(const std::string& addr, int port);

/// Throws LaunchError(kEnvironment) naming the port and the --master_port remedy (with a free
/// port nearby) when MASTER_PORT is taken on master_addr.
void check_master_port_free(const std::string& master_addr, int port);

}  // namespace shardscope::launcher
