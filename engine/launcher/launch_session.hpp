#pragma once
// The session of a launch: the launcher opens the session file, hosts the collector every rank
// streams to, and sends what only it knows (RunStart with every rank's pid and device, its own
// messages, RunEnd with every rank's exit code) through a connection of its own (rank -1).

#include <memory>
#include <string>

#include "sessions/events.hpp"

namespace shardscope::sessions {
class Collector;
class EventSink;
}  // namespace shardscope::sessions

namespace shardscope::engine::launcher {

class LaunchSession {
 public:
  /// Opens (or creates) the session file and starts the collector on 127.0.0.1 at a free port.
  /// Throws LaunchError(kUsage) naming the file when it is not a usable session database.
  explicit LaunchSession(const std::string& db_path);
  /// Closes if still open.
  ~LaunchSession();
  LaunchSession(const LaunchSession&) = delete;
  LaunchSession& operator=(const LaunchSession&) = delete;

  const std::string& uid() const { return uid_; }
  /// "127.0.0.1:PORT", what every rank is given with --collector.
  std::string collector_address() const;
  /// Sends one event as the launcher. A failure is reported once on stderr and later events are
  /// dropped: a broken session must not stop a training run.
  void send(const sessions::Event& event);
  /// Flushes, waits for the ranks' events to be committed, and stops the collector.
  void close();

 private:
  std::string db_path_;
  std::string uid_;
  std::unique_ptr<sessions::Collector> collector_;
  std::unique_ptr<sessions::EventSink> sink_;
  bool broken_ = false;
};

}  // namespace shardscope::engine::launcher
