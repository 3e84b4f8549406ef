#pragma once
// The wire form of events: length-prefixed binary frames (docs/sessions.md, "Wire format").
// Every connection starts with a Hello frame naming the session and the rank; events follow.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "sessions/events.hpp"

namespace shardscope::sessions {

/// Frames larger than this are garbage by definition (a RunStart with a big config is ~100 KiB).
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;
/// The four bytes a Hello payload starts with: "SSEV".
inline constexpr std::uint32_t kHelloMagic = 0x56455353u;

/// First frame of every connection.
struct Hello {
  std::uint16_t protocol_version = kProtocolVersion;
  std::string session_uid;  ///< the launcher's id of the run; all ranks of a run share it
  int rank = 0;             ///< -1 for the launcher itself
  std::string host;
  std::int64_t pid = 0;
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
};

using Frame = std::variant<Hello, Event>;

/// Appends the Hello frame to `out`.
void encode_hello(const Hello& hello, std::string& out);
/// Appends one frame carrying `event` to `out`.
void encode_event(const Event& event, std::string& out);

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

 private:
  std::string buffer_;
  std::size_t consumed_ = 0;
  std::size_t max_frame_bytes_;
};

/// Decodes exactly one frame's payload (without the length prefix); used by FrameDecoder and tests.
Frame decode_frame_payload(const char* data, std::size_t size);

}  // namespace shardscope::sessions
