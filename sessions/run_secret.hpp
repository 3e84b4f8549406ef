#pragma once
// The per-run secret that proves a connection belongs to a run: 32 bytes from the kernel's random
// generator, made by the launcher for every run (or read from a file the user shares between the
// nodes of a --no_ssh run). It reaches ranks in SHARDSCOPE_COLLECTOR_SECRET, which a rank removes
// from its environment as it reads it, and node agents on their private channel; it is never on
// a command line and never in a session file, so nothing in the database lets anyone derive it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope::sessions {

/// The variable a rank finds its run's secret in (hex text).
inline constexpr const char* kCollectorSecretVariable = "SHARDSCOPE_COLLECTOR_SECRET";
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

/// The secret in SHARDSCOPE_COLLECTOR_SECRET, removed from this process's environment so nothing
/// the rank starts inherits it; nullopt when unset or empty.
std::optional<std::string> take_secret_from_environment();

}  // namespace shardscope::sessions
