#pragma once
// The channel between the launcher and a node agent: JSON messages in length-prefixed frames
// (u32 little-endian length, then the payload), over ssh's stdin/stdout, or over a TCP connection
// the agent opens back to the launcher when the transport (pdsh, mpirun, srun) forwards no stdin.
// The TCP channel is sealed: the agent prints a fresh random token on its stdout, which the
// transport carries back to the launcher inside its own ssh (or MPI, Slurm) session; both sides
// derive keys from it and both nonces, and every frame is encrypted (HMAC-SHA256 in counter
// mode) and authenticated (HMAC-SHA256 tag over its sequence number and ciphertext). A process
// that knows only the command line (launcher address, node name) can neither read the job nor
// forge a message. docs/launcher.md ("Node agents") describes it.

#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace shardscope::launcher {

/// Frames above this are refused (a job with a large environment is a few KiB).
inline constexpr std::size_t kMaxAgentFrameBytes = 4u << 20;
/// What an agent prints first on its stdout when it connects back: "SHARDSCOPE-NODE <id> <token>".
inline constexpr const char* kAgentTokenMarker = "SHARDSCOPE-NODE ";

/// The channel broke: end of stream, an oversized frame, a frame that fails its tag, bad JSON.
class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Keys of one direction of a sealed channel.
struct SealKeys {
  std::string encrypt;
  std::string mac;
};

/// The keys of the direction `direction` ("launcher" or "agent": who sends) from the agent's token
/// and both nonces (hex text as exchanged).
SealKeys derive_seal_keys(std::string_view token, std::string_view direction, std::string_view launcher_nonce,
                          std::string_view agent_nonce);
/// Encrypts and tags message number `sequence`: ciphertext followed by a 32-byte tag.
std::string seal_message(const SealKeys& keys, std::uint64_t sequence, std::string_view plaintext);
/// The plaintext of a sealed message, or nullopt when its tag does not verify.
std::optional<std::string> unseal_message(const SealKeys& keys, std::uint64_t sequence, std::string_view sealed);

/// Frames messages both ways; sealed once seal() was called.
class MessageCodec {
 public:
  /// Appends received bytes.
  void feed(const char* data, std::size_t size);
  /// The next complete message; nullopt when none is complete. Throws ChannelError.
  std::optional<nlohmann::json> next();
  /// The framed (and, once sealed, encrypted) bytes of `message`.
  std::string encode(const nlohmann::json& message);
  /// From now on frames are sealed with `outgoing` and must verify with `incoming`.
  void seal(SealKeys outgoing, SealKeys incoming);
  bool sealed() const { return sealed_; }
  std::size_t buffered_bytes() const { return buffer_.size(); }
  /// Frames above `bytes` are refused from now on (a peer not yet proven gets a small cap).
  void set_max_frame_bytes(std::size_t bytes) { max_frame_bytes_ = bytes; }

 private:
  std::string buffer_;
  std::size_t max_frame_bytes_ = kMaxAgentFrameBytes;
  bool sealed_ = false;
  SealKeys outgoing_, incoming_;
  std::uint64_t sent_ = 0, received_ = 0;
};

/// The id and token of an agent's "SHARDSCOPE-NODE <id> <token>" line (wherever the transport's
/// prefix put it: "host: ", "[1,0]<stdout>:", "0: "); nullopt for any other line.
std::optional<std::pair<std::string, std::string>> parse_agent_token_line(const std::string& line);

/// One side of a channel on file descriptors, with reads and writes bounded by timeouts and
/// thread-safe sends (the agent's rank relay and its launcher reader share it).
class BlockingChannel {
 public:
  static constexpr int kSendTimeoutMs = 5000;
  BlockingChannel(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {}
  /// Throws ChannelError when the other side is gone or has not read for kSendTimeoutMs.
  void send(const nlohmann::json& message);
  /// The next message; nullopt when `timeout_ms` passes first. Throws ChannelError at end of stream.
  std::optional<nlohmann::json> receive(int timeout_ms);
  MessageCodec& codec() { return codec_; }

 private:
  int in_fd_, out_fd_;
  MessageCodec codec_;
  std::mutex send_mutex_;
};

}  // namespace shardscope::launcher
