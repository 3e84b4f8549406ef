#pragma once
// Writes events into a Store in transactions. The collector and FileEventSink are its callers; it
// is public so tools (importers, tests) can fill a store without a network in between.

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class Store;

/// Collectives kept per rank and group in the store's flight records (the latest ones; older are forgotten).
inline constexpr std::int64_t kCollectivesKept = 1024;

/// An event with the session it belongs to (shared: a batch holds many events of one session).
struct SessionEvent {
  std::shared_ptr<const std::string> session_uid;
  Event event;
};

/// An event as the collector queues it for the writer: the kinds every step sends held in place,
/// the rare large ones (RunStart alone is 968 bytes) boxed, so an element costs about 250 bytes
/// instead of the Event variant's 976 and the same memory cap holds a transaction of 2.5 times the
/// records (docs/benchmarks.md, "shardscope-load", 2026-12-08).
using QueuedEvent = std::variant<StepMetrics, TimerBreakdown, CommRecord, CollectiveMark, LogLine, ActivityBatch,
                                 NvtxBatch, std::unique_ptr<const Event>>;

/// `event` in its queued form (moved from, boxed only when it is not one of QueuedEvent's own kinds).
QueuedEvent queued_event(Event&& event);

class StoreWriter {
 public:
  /// Borrows `store`, which must outlive the writer and be used from the writer's thread only.
  explicit StoreWriter(Store& store);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  /// Writes `batch` in one transaction: after a crash either all of it is in the file or none.
  void write(const std::vector<SessionEvent>& batch);
  /// Same, for queued events of session `session_uid` (the collector's chunks, written in place).
  void write(const std::string& session_uid, const std::vector<const QueuedEvent*>& batch);
  /// Same, for events of one session.
  void write(const std::string& session_uid, const std::vector<Event>& events);
  /// The row id of session `uid`, creating a "running" row if it is not there yet.
  std::int64_t ensure_session(const std::string& uid);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::sessions
