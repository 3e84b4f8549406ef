#pragma once
// The collective flight record of one rank: a bounded ring of its latest collectives (sequence
// number in its group, op, bytes, dtype, step, phase, enter and leave times), in the spirit of
// PyTorch's NCCL flight recorder but for every backend and always on. The communicator enters a
// collective when it issues it and leaves it when its wait returns (for an overlapped collective
// that is an upper bound of its end). Marks not yet sent are taken by the communicator's reporter
// thread and streamed to the collector (CollectiveMark events), so a hang is visible live;
// judging them is diagnosis/'s job (docs/doctor.md).
//
// Cost: one short uncontended lock and a few stores per enter and per leave; the ring is allocated
// once. docs/benchmarks.md has the measured overhead.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::engine {

/// Where in a step a collective was issued (set by the engine as it enters each phase).
enum class CollectivePhase : std::uint8_t { kSetup, kData, kForward, kBackward, kOptimizer, kCheckpoint };

/// "setup", "data", "forward", "backward", "optimizer", "checkpoint".
const char* collective_phase_name(CollectivePhase phase);

struct FlightEntry {
  std::int64_t sequence = 0;
  const char* op = "";
  std::int64_t bytes = 0;
  const char* dtype = "";
  std::string tag;
  std::int64_t step = 0;
  CollectivePhase phase = CollectivePhase::kSetup;
  double entered_at = 0;  ///< Unix seconds
  double left_at = 0;     ///< Unix seconds; 0 while waiting
  bool sent_enter = false, sent_leave = false;
};

class CollectiveFlightRecord {
 public:
  explicit CollectiveFlightRecord(std::size_t capacity = 1024);

  /// Records collective `sequence` as issued now.
  void enter(std::int64_t sequence, const char* op, std::int64_t bytes, const char* dtype, const std::string& tag,
             std::int64_t step, CollectivePhase phase);
  /// Records that the wait of `sequence` returned now; ignored when it has left the ring.
  void leave(std::int64_t sequence);
  /// The entries in the ring, oldest first.
  std::vector<FlightEntry> snapshot() const;
  /// A mark for each entry entered or left since the last call (oldest first); entries the ring
  /// overwrote before they were taken are counted in marks_lost().
  std::vector<sessions::CollectiveMark> take_marks(int rank);
  std::int64_t marks_lost() const;
  std::size_t capacity() const { return ring_.size(); }

 private:
  FlightEntry& slot(std::int64_t sequence) { return ring_[static_cast<std::size_t>(sequence) % ring_.size()]; }

  mutable std::mutex mutex_;
  std::vector<FlightEntry> ring_;
  std::int64_t newest_ = 0;      ///< the latest sequence entered
  std::int64_t lost_ = 0;
};

}  // namespace shardscope::engine
