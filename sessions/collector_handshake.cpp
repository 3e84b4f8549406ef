#include "sessions/collector_handshake.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "sessions/errors.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/sha256.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::sessions {
namespace {

constexpr std::string_view kHelloLabel{"shardscope collector hello v3\0", 30};
constexpr std::string_view kWelcomeLabel{"shardscope collector welcome v3\0", 32};


template <typename Bytes>
void update(HmacSha256& mac, const Bytes& bytes) {
  mac.update(bytes.data(), bytes.size());
}

Proof to_proof(const Sha256Digest& digest) {
  Proof proof{};
  std::memcpy(proof.data(), digest.data(), proof.size());
  return proof;
}

using Clock = std::chrono::steady_clock;

// Reads exactly `size` bytes before `deadline`; false on end of stream, throws on timeout/error.
bool read_exact(int fd, char* out, std::size_t size, Clock::time_point deadline, const std::string& where,
                const char* step) {
  std::size_t got = 0;
  while (got < size) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    const int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0)
      throw CollectorBusyError("the collector at " + where + " did not answer in time while " + step);
    const ssize_t n = ::recv(fd, out + got, size - got, 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return false;
      throw CollectorUnreachableError("the connection to the collector at " + where + " failed while " + step +
                                      ": " + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// One handshake frame; nullopt when the collector closed the connection first.
std::optional<Frame> read_handshake_frame(int fd, Clock::time_point deadline, const std::string& where,
                                          const char* step) {
  std::uint32_t length = 0;
  if (!read_exact(fd, reinterpret_cast<char*>(&length), 4, deadline, where, step)) return std::nullopt;
  if (length == 0 || length > kMaxHandshakeFrameBytes)
    throw CollectorUnreachableError("the server at " + where + " is not a ShardScope collector: a frame of " +
                                    std::to_string(length) + " bytes while " + step);
  std::string payload(length, '\0');
  if (!read_exact(fd, payload.data(), length, deadline, where, step)) return std::nullopt;
  try {
    return decode_frame_payload(payload.data(), payload.size());
  } catch (const ProtocolError& e) {
    throw CollectorUnreachableError("the server at " + where + " is not a ShardScope collector (" + e.what() + ")");
  }
}

void send_all(int fd, const std::string& bytes, const std::string& where) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw CollectorUnreachableError("lost the connection to the collector at " + where +
                                      " during the handshake: " + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
}

Challenge expect_challenge(int fd, Clock::time_point deadline, const std::string& where) {
  const auto frame = read_handshake_frame(fd, deadline, where, "waiting for its challenge");
  if (!frame)
    throw CollectorBusyError("the server at " + where + " closed the connection without a challenge: it is "
                                    "not a ShardScope collector of protocol " + std::to_string(kProtocolVersion) +
                                    ", or it is not accepting connections any more");
  const auto* challenge = std::get_if<Challenge>(&*frame);
  if (!challenge)
    throw CollectorUnreachableError("the server at " + where + " did not start with a challenge: it is not a "
                                    "ShardScope collector of protocol " + std::to_string(kProtocolVersion));
  if (challenge->protocol_version != kProtocolVersion)
    throw CollectorUnreachableError("the collector at " + where + " speaks protocol " +
                                    std::to_string(challenge->protocol_version) + ", this build speaks " +
                                    std::to_string(kProtocolVersion) +
                                    ": the launcher and this rank come from different ShardScope builds");
  return *challenge;
}

}  // namespace

Nonce random_nonce() {
  Nonce nonce{};
  const std::string bytes = random_bytes(nonce.size());
  std::memcpy(nonce.data(), bytes.data(), nonce.size());
  return nonce;
}

Proof hello_proof(std::string_view secret, const Nonce& server_nonce, const Hello& hello) {
  HmacSha256 mac(secret);
  mac.update(kHelloLabel);
  update(mac, server_nonce);
  update(mac, hello.client_nonce);
  mac.update(hello_identity_bytes(hello));
  return to_proof(mac.finish());
}

Proof welcome_proof(std::string_view secret, const Nonce& client_nonce, const Nonce& server_nonce,
                    const Welcome& welcome) {
  HmacSha256 mac(secret);
  mac.update(kWelcomeLabel);
  update(mac, client_nonce);
  update(mac, server_nonce);
  const std::uint32_t uid_length = static_cast<std::uint32_t>(welcome.session_uid.size());
  mac.update(&uid_length, sizeof uid_length);
  mac.update(welcome.session_uid);
  mac.update(&welcome.server_time, sizeof welcome.server_time);
  return to_proof(mac.finish());
}

bool proofs_equal(const Proof& a, const Proof& b) {
  Sha256Digest x{}, y{};
  std::memcpy(x.data(), a.data(), x.size());
  std::memcpy(y.data(), b.data(), y.size());
  return constant_time_equal(x, y);
}

HandshakeResult client_handshake(int fd, std::string_view secret, Hello hello, int timeout_ms,
                                 const std::string& where) {
  if (secret.empty())
    throw CollectorUnreachableError("no secret to prove this rank belongs to the run reporting to " + where +
                                    ": neither " + kCollectorKeyFdVariable + " nor " + kCollectorSecretVariable +
                                    " is set; start ranks with `shardscope launch`");
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const Challenge challenge = expect_challenge(fd, deadline, where);
  hello.protocol_version = kProtocolVersion;
  hello.client_nonce = random_nonce();
  hello.proof = hello_proof(secret, challenge.nonce, hello);
  std::string bytes;
  encode_hello(hello, bytes);
  const double sent_at = unix_now();
  send_all(fd, bytes, where);
  const auto frame = read_handshake_frame(fd, deadline, where, "waiting for its welcome");
  const double received_at = unix_now();
  if (!frame)
    throw CollectorUnreachableError("the collector at " + where + " refused this connection: it did not accept the "
                                    "proof, so this rank's key (" + kCollectorKeyFdVariable + ") is missing, wrong, "
                                    "another rank's or from another run, the rank is not one of the run's, or it "
                                    "is connected already");
  const auto* welcome = std::get_if<Welcome>(&*frame);
  if (!welcome || !proofs_equal(welcome->proof, welcome_proof(secret, hello.client_nonce, challenge.nonce, *welcome)))
    throw CollectorUnreachableError("the server at " + where + " answered the handshake without knowing the run's "
                                    "secret: it is not this run's collector; nothing was sent to it");
  HandshakeResult result;
  result.session_uid = welcome->session_uid;
  result.server_time = welcome->server_time;
  result.round_trip_s = received_at - sent_at;
  result.clock_offset_s = (sent_at + received_at) / 2 - welcome->server_time;
  return result;
}

}  // namespace shardscope::sessions
