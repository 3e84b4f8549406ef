#pragma once
// Writes events into a Store in transactions. The collector and FileEventSink are its callers; it
// is public so tools (importers, tests) can fill a store without a network in between.

#include <cstdint>
#include <memory>
#include <string>
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

class StoreWriter {
 public:
  /// Borrows `store`, which must outlive the writer and be used from the writer's thread only.
  explicit StoreWriter(Store& store);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  /// Writes `batch` in one transaction: after a crash either all of it is in the file or none.
  void write(const std::vector<SessionEvent>& batch);
  /// Same, for events held elsewhere (the collector's queued chunks, written without moving them).
  void write(const std::vector<const SessionEvent*>& batch);
  /// Same, for events of one session.
  void write(const std::string& session_uid, const std::vector<Event>& events);
  /// The row id of session `uid`, creating a "running" row if it is not there yet.
  std::int64_t ensure_session(const std::string& uid);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::sessions
