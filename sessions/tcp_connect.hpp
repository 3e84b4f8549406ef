#pragma once
// A TCP connection with a bounded wait: a peer that is not there is reported in seconds, not after
// the kernel's two-minute SYN retry schedule (ranks to the collector, node agents to the launcher).

#include <string>

namespace shardscope::sessions {

/// Connects to host:port within `timeout_ms` and returns the blocking, close-on-exec socket.
/// Throws SessionsError(kUnreachable) with the cause ("Connection refused", "timed out after 5000 ms",
/// "cannot resolve host: ...").
int connect_tcp(const std::string& host, int port, int timeout_ms);

}  // namespace shardscope::sessions
