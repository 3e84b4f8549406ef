#pragma once
// The wire form of events: length-prefixed binary frames (docs/sessions.md, "Wire format").
// Every connection starts with the handshake (the collector's Challenge, the client's Hello with
// its proof, the collector's Welcome; collector_handshake.hpp); events follow.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "sessions/events.hpp"

namespace shardscope::sessions {

/// Frames larger than this are garbage by definition (a RunStart with a big config is ~100 KiB).
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;
/// The largest handshake frame: what a connection may send before it has proven anything.
inline constexpr std::size_t kMaxHandshakeFrameBytes = 1024;
/// The four bytes Hello and Challenge payloads start with: "SSEV".
inline constexpr std::uint32_t kHelloMagic = 0x56455353u;
/// Random bytes of each side's nonce.
inline constexpr std::size_t kNonceBytes = 32;
using Nonce = std::array<std::uint8_t, kNonceBytes>;
using Proof = std::array<std::uint8_t, 32>;

/// The collector's first frame on every connection: a fresh nonce the client must answer.
struct Challenge {
  std::uint16_t protocol_version = kProtocolVersion;
  Nonce nonce{};
};

/// The client's first frame: who it is, and the proof that it holds the run's secret
/// (HMAC-SHA256 over both nonces and these fields; see collector_handshake.hpp).
struct Hello {
  std::uint16_t protocol_version = kProtocolVersion;
  int rank = 0;             ///< -1 for a launcher (it relays every rank's lines and the run's start and end)
  std::string host;
  std::int64_t pid = 0;
  Nonce client_nonce{};
  Proof proof{};
};

/// The collector's answer to a valid Hello: the run's session, its clock, and its own proof.
struct Welcome {
  std::string session_uid;
  double server_time = 0;  ///< Unix seconds on the collector's host when it answered
  Proof proof{};
};

/// Frame type bytes; stable across versions (new types get new numbers).
enum class FrameType : std::uint8_t {
  kHello = 1,
  kRunStart = 2,
  kStepMetrics = 3,
  kTimerBreakdown = 4,
  kCommRecord = 5,
  kActivityBatch = 6,
  kNvtxBatch = 7,
  kLogLine = 8,
  kRunEnd = 9,
  kSeriesPoint = 10,
  kCommSummary = 11,
  kSessionOrigin = 12,
  kHostReport = 13,
  kChallenge = 14,
  kWelcome = 15,
  kCollectiveMark = 16,
  kFinding = 17,
};

using Frame = std::variant<Hello, Challenge, Welcome, Event>;

/// Appends the handshake frames to `out`.
void encode_hello(const Hello& hello, std::string& out);
void encode_challenge(const Challenge& challenge, std::string& out);
void encode_welcome(const Welcome& welcome, std::string& out);
/// The bytes of Hello's fields that its proof covers (rank, host, pid in wire order).
std::string hello_identity_bytes(const Hello& hello);
/// Appends one frame carrying `event` to `out`.
void encode_event(const Event& event, std::string& out);

/// The first five bytes of a frame: its length (type + payload) and its type.
struct FrameHeader {
  std::size_t length = 0;
  std::uint8_t type = 0;
};

/// The most records (event_record_count) a frame of this type and length can decode to, from the
/// smallest wire size of one record; the collector reserves memory for that many before reading.
std::size_t max_records_in_frame(std::uint8_t type, std::size_t length);

/// Splits a byte stream into frames. Feed it what recv() returned; take frames with next().
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t max_frame_bytes = kMaxFrameBytes);

  /// Appends received bytes.
  void feed(const char* data, std::size_t size);
  /// Decodes the next complete frame into `out`; false when none is complete yet.
  /// Throws ProtocolError for an oversized frame, an unknown type or a malformed payload.
  bool next(Frame& out);
  /// Bytes received but not yet decoded (a partial frame at disconnect is reported with this).
  std::size_t buffered_bytes() const { return buffer_.size() - consumed_; }
  /// Size of the frame being assembled, 0 when not even its header has arrived.
  std::size_t pending_frame_bytes() const;
  /// The header of the frame being assembled, once its first five bytes are there; throws
  /// ProtocolError when it declares a length outside 1..max_frame_bytes.
  std::optional<FrameHeader> pending_header() const;
  /// Bytes still missing before the next frame is complete: up to its 5-byte header, then up to its
  /// end. Throws ProtocolError once a header declares a length outside 1..max_frame_bytes, so a
  /// reader that reads exactly this many bytes never buffers more than one valid frame.
  std::size_t bytes_wanted() const;
  /// Changes the frame size limit (the collector raises it once a connection has authenticated).
  void set_max_frame_bytes(std::size_t max_frame_bytes) { max_frame_bytes_ = max_frame_bytes; }

 private:
  std::size_t checked_length() const;

  std::string buffer_;
  std::size_t consumed_ = 0;
  std::size_t max_frame_bytes_;
};

/// Decodes exactly one frame's payload (without the length prefix); used by FrameDecoder and tests.
Frame decode_frame_payload(const char* data, std::size_t size);

}  // namespace shardscope::sessions
