#pragma once
// The clocks and host name every process that records events uses, so that the stored times and
// host names of the launcher, the node agents, the ranks and the collector agree.

#include <chrono>
#include <string>

namespace shardscope::sessions {

/// Seconds since the Unix epoch by the system clock: the time base of every stored event.
double unix_now();

/// This machine's name as gethostname() gives it (empty when it fails).
std::string host_name();

/// Milliseconds of the monotonic clock since `start`: the host-side durations the engine records.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace shardscope::sessions
