#include "engine/collective_flight_record.hpp"

#include <chrono>
#include <stdexcept>

namespace shardscope::engine {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

sessions::CollectiveMark to_mark(const FlightEntry& e, int rank) {
  sessions::CollectiveMark m;
  m.rank = rank;
  m.sequence = e.sequence;
  m.op = e.op;
  m.bytes = e.bytes;
  m.dtype = e.dtype;
  m.step = e.step;
  m.phase = collective_phase_name(e.phase);
  m.tag = e.tag;
  m.entered_at = e.entered_at;
  if (e.left_at > 0) m.left_at = e.left_at;
  return m;
}

}  // namespace

const char* collective_phase_name(CollectivePhase phase) {
  switch (phase) {
    case CollectivePhase::kData: return "data";
    case CollectivePhase::kForward: return "forward";
    case CollectivePhase::kBackward: return "backward";
    case CollectivePhase::kOptimizer: return "optimizer";
    case CollectivePhase::kCheckpoint: return "checkpoint";
    case CollectivePhase::kSetup: break;
  }
  return "setup";
}

CollectiveFlightRecord::CollectiveFlightRecord(std::size_t capacity) : ring_(capacity) {
  if (capacity == 0) throw std::invalid_argument("a collective flight record needs a capacity of at least 1");
}

void CollectiveFlightRecord::enter(std::int64_t sequence, const char* op, std::int64_t bytes, const char* dtype,
                                   const std::string& tag, std::int64_t step, CollectivePhase phase) {
  const double now = unix_seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  FlightEntry& e = slot(sequence);
  if (e.sequence > 0 && !e.sent_enter) ++lost_;
  e.sequence = sequence;
  e.op = op;
  e.bytes = bytes;
  e.dtype = dtype;
  e.tag = tag;
  e.step = step;
  e.phase = phase;
  e.entered_at = now;
  e.left_at = 0;
  e.sent_enter = e.sent_leave = false;
  newest_ = std::max(newest_, sequence);
}

void CollectiveFlightRecord::leave(std::int64_t sequence) {
  const double now = unix_seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  FlightEntry& e = slot(sequence);
  if (e.sequence == sequence) e.left_at = now;
}

std::vector<FlightEntry> CollectiveFlightRecord::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightEntry> entries;
  const auto n = static_cast<std::int64_t>(ring_.size());
  for (std::int64_t s = std::max<std::int64_t>(1, newest_ - n + 1); s <= newest_; ++s) {
    const FlightEntry& e = ring_[static_cast<std::size_t>(s % n)];
    if (e.sequence == s) entries.push_back(e);
  }
  return entries;
}

std::vector<sessions::CollectiveMark> CollectiveFlightRecord::take_marks(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<sessions::CollectiveMark> marks;
  const auto n = static_cast<std::int64_t>(ring_.size());
  for (std::int64_t s = std::max<std::int64_t>(1, newest_ - n + 1); s <= newest_; ++s) {
    FlightEntry& e = ring_[static_cast<std::size_t>(s % n)];
    if (e.sequence != s) continue;
    const bool left = e.left_at > 0;
    if (e.sent_enter && (!left || e.sent_leave)) continue;
    marks.push_back(to_mark(e, rank));
    e.sent_enter = true;
    e.sent_leave = left;
  }
  return marks;
}

std::int64_t CollectiveFlightRecord::marks_lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_;
}

}  // namespace shardscope::engine
