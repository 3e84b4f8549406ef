#pragma once
// The session of a launch: the launcher opens the session file, hosts the collector every rank
// streams to (bound to the address the run uses, accepting only connections that prove the run's
// secret), and sends what only it knows (RunStart with every rank's pid and device, HostReports,
// its own messages, RunEnd with every rank's exit code) through a connection of its own (rank -1).
// A --no_ssh node other than node 0 hosts no collector: it joins node 0's with the shared secret.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sessions/events.hpp"

namespace shardscope::sessions {
class Collector;
class TcpEventSink;
}  // namespace shardscope::sessions

namespace shardscope::launcher {

struct LaunchSessionOptions {
  std::string db_path;                    ///< host the collector writing here ...
  std::optional<std::string> join;        ///< ... or join the collector at HOST:PORT (another node's)
  std::string bind_host = "127.0.0.1";    ///< the collector's address: the one the run uses
  int port = 0;                           ///< 0: a free port
  int world_size = 0;                     ///< ranks the collector accepts (0..world_size-1, and -1)
  std::optional<std::string> secret;      ///< shared secret; unset: a new random one for this run
  /// Sees every event the collector accepts, as it arrives (the run doctor); hosting only.
  std::function<void(const sessions::Event&)> observe;
};

class LaunchSession {
 public:
  /// Opens (or creates) the session file and starts the collector, or joins another node's.
  /// Throws LaunchError(kUsage) naming the file or address when it is not usable.
  explicit LaunchSession(const LaunchSessionOptions& options);
  /// Closes if still open.
  ~LaunchSession();
  LaunchSession(const LaunchSession&) = delete;
  LaunchSession& operator=(const LaunchSession&) = delete;

  const std::string& uid() const { return uid_; }
  /// The run's secret: each rank gets only its own key derived from it (attach_session).
  const std::string& secret() const { return secret_; }
  /// "ADDR:PORT", what every rank is given with --collector.
  const std::string& collector_address() const { return address_; }
  /// This host's clock minus the collector host's (0 when this launcher hosts the collector).
  double clock_offset_s() const;
  /// Sends one event as the launcher. A failure is reported once on stderr and later events are
  /// dropped: a broken session must not stop a training run.
  void send(const sessions::Event& event);
  /// Flushes, waits for the ranks' events to be committed, and stops the collector.
  void close();

 private:
  std::string where_;
  std::string uid_, secret_, address_;
  std::unique_ptr<sessions::Collector> collector_;
  std::unique_ptr<sessions::TcpEventSink> sink_;
  bool broken_ = false;
};

}  // namespace shardscope::launcher
