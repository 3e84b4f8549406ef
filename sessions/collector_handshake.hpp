#pragma once
// The collector's challenge-response, one mechanism for one host and many: on every new
// connection the collector sends a Challenge (a fresh random nonce); the client answers with a
// Hello whose proof is HMAC-SHA256(secret, both nonces and the Hello's fields); the collector
// checks it and answers with a Welcome carrying the session uid, its clock and its own proof over
// both nonces. The secret never crosses the wire, a recorded handshake cannot be replayed (the
// server nonce is new each time), and the client knows it reached its own run's collector.
// docs/sessions.md ("Authentication") describes it.
//
// client_handshake() is the whole client side, callable on any connected socket: TcpEventSink
// uses it, and so can a test or fuzzer that needs to get past the handshake.

#include <string>
#include <string_view>

#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"

namespace shardscope::sessions {

/// What the client learns from a successful handshake.
struct HandshakeResult {
  std::string session_uid;   ///< the run's session, as the collector records it
  double server_time = 0;    ///< the collector host's clock when it answered (Unix seconds)
  double round_trip_s = 0;   ///< from sending Hello to receiving Welcome
  double clock_offset_s = 0; ///< this host's clock minus the collector host's, +- round_trip_s / 2
};

/// The collector did not send its challenge in time, or closed the connection before it: it is
/// shedding unproven connections under a flood, or busy. Worth another try (TcpEventSink retries
/// with backoff until its start-up deadline); a refused proof or an impostor is not.
class CollectorBusyError : public CollectorUnreachableError {
 public:
  using CollectorUnreachableError::CollectorUnreachableError;
};

/// A nonce from the kernel's random generator.
Nonce random_nonce();
/// The client's proof: HMAC-SHA256(secret, label | server nonce | client nonce | rank, host, pid).
Proof hello_proof(std::string_view secret, const Nonce& server_nonce, const Hello& hello);
/// The collector's proof: HMAC-SHA256(secret, label | client nonce | server nonce | uid | time).
Proof welcome_proof(std::string_view secret, const Nonce& client_nonce, const Nonce& server_nonce,
                    const Welcome& welcome);
/// Whether two proofs are equal, in constant time.
bool proofs_equal(const Proof& a, const Proof& b);

/// Runs the client side on the connected, blocking socket `fd`: reads the Challenge, sends
/// `hello` (its nonce and proof filled in here), reads and checks the Welcome, each step within
/// `timeout_ms`. `where` ("10.0.0.1:29600") names the collector in errors. Throws
/// CollectorUnreachableError saying which step failed and why (no collector there, another
/// protocol version, the secret refused, an impostor that does not know the secret, a timeout).
HandshakeResult client_handshake(int fd, std::string_view secret, Hello hello, int timeout_ms,
                                 const std::string& where);

}  // namespace shardscope::sessions
