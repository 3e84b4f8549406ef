#pragma once
// The per-run secret and the keys derived from it. The launcher makes 32 random bytes for every
// run (or reads them from a file the user shares between the nodes of a --no_ssh run); node agents
// get the secret on their private channel. No rank ever holds it: each rank gets its own key,
// HMAC-SHA256(secret, "shardscope rank key v1" | rank), and the collector checks a Hello against
// the key of the rank it claims, so one rank's key (read by a same-user process from that rank's
// memory) proves only that rank: it cannot write another rank's events, relay as the launcher or
// end the run. The launcher proves itself with the key of rank -1.
//
// A rank's key reaches it on an inherited pipe (SHARDSCOPE_COLLECTOR_KEY_FD names the descriptor;
// the rank reads it to its end and closes it), never in its initial environment, which any process
// of the same user can read from /proc/<pid>/environ for the rank's whole life (unsetenv does not
// clear that copy). Nothing in a session file lets anyone derive a key.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope::sessions {

/// A rank started by hand may find its key in this variable (hex text); the launcher never sets it.
inline constexpr const char* kCollectorSecretVariable = "SHARDSCOPE_COLLECTOR_SECRET";
/// The variable naming the inherited descriptor a launched rank reads its key from.
inline constexpr const char* kCollectorKeyFdVariable = "SHARDSCOPE_COLLECTOR_KEY_FD";
/// The descriptor the launcher hands a rank's key on (the first after stdin, stdout, stderr).
inline constexpr int kCollectorKeyFd = 3;
/// Shortest secret accepted from a file: 128 bits as hex digits.
inline constexpr std::size_t kMinSecretChars = 32;

/// `count` bytes from getrandom(2). Throws SessionsError(kStorage) if the kernel has none to give.
std::string random_bytes(std::size_t count);
/// A new run secret: 32 random bytes as 64 hex digits.
std::string new_run_secret();
/// Lowercase hex of `bytes`.
std::string hex_encode(std::string_view bytes);

/// Reads a secret shared out of band (a --no_ssh run's nodes, a Kubernetes secret volume). The file
/// must be a regular file owned by this user and readable by nobody else (mode 0600 or 0400, as
/// ssh insists for private keys), with at least kMinSecretChars characters; trailing whitespace is
/// dropped. Throws SessionsError(kInvalidArgument) naming the file, what is wrong and the fix.
std::string read_secret_file(const std::string& path);

/// The key rank `rank` (-1: a launcher) proves itself with: hex of HMAC-SHA256(secret, label | rank).
std::string rank_key(std::string_view secret, int rank);

/// This rank's key: read to its end from the descriptor SHARDSCOPE_COLLECTOR_KEY_FD names (which is
/// then closed), or else taken from SHARDSCOPE_COLLECTOR_SECRET; either variable is removed from
/// this process's environment so nothing the rank starts inherits it. nullopt when neither is set.
/// Throws SessionsError(kInvalidArgument) when the descriptor cannot be read.
std::optional<std::string> take_secret_from_environment();

/// Reads a key handed over on `fd` (at most 4096 bytes, to its end) and closes `fd`; trailing
/// white space is dropped. Throws SessionsError(kInvalidArgument) naming the descriptor.
std::string read_key_from_descriptor(int fd);

}  // namespace shardscope::sessions
