#pragma once
// The launcher's end of node agents' channels, driven by its poll loop: AgentLink for an agent
// that is talking (reads, non-blocking writes, clock probes), AgentRendezvous for agents that
// connect back over TCP (pdsh, mpirun, srun) until their sealed channel proves itself.

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launcher/agent_channel.hpp"

namespace shardscope::launcher {

using AgentClock = std::chrono::steady_clock;

/// The best clock offset seen over ping/pong pairs (the pair with the shortest round trip, as
/// Cristian's algorithm takes it): the agent's clock minus the launcher's, good to +- rtt/2.
struct ClockEstimate {
  std::optional<double> offset_s;
  double round_trip_s = 0;
  void add(double sent_at, double agent_time, double received_at);
};

class AgentLink {
 public:
  AgentLink() = default;
  AgentLink(AgentLink&& other) noexcept;
  AgentLink& operator=(AgentLink&& other) noexcept;
  AgentLink(const AgentLink&) = delete;
  AgentLink& operator=(const AgentLink&) = delete;

  /// Reads from `read_fd` and writes to `write_fd` (the same socket, or ssh's stdout and stdin);
  /// `owns` closes them with the link.
  void attach(int read_fd, int write_fd, bool owns, MessageCodec codec = {});
  bool attached() const { return read_fd_ >= 0; }
  int read_fd() const { return read_fd_; }
  /// The fd to poll for POLLOUT while messages wait to be written, else -1.
  int pending_write_fd() const { return outbox_.empty() ? -1 : write_fd_; }
  /// Reads what is there and returns the messages it completes. Throws ChannelError (end of
  /// stream, a broken frame).
  std::vector<nlohmann::json> read_available();
  /// Queues `message` and writes what the channel takes now; a broken channel shows on the next read.
  void send(const nlohmann::json& message);
  /// Writes queued bytes (on POLLOUT).
  void flush();
  /// Sends a clock probe (a ping with the next sequence number).
  void ping();
  /// Records a pong; true when it answered one of our pings.
  bool pong(const nlohmann::json& message);
  const ClockEstimate& clock() const { return clock_; }
  void close();
  ~AgentLink();

  AgentClock::time_point last_heard;  ///< when the agent last said anything

 private:
  int read_fd_ = -1, write_fd_ = -1;
  bool owns_ = false;
  bool ended_ = false;
  MessageCodec codec_;
  std::string outbox_;
  std::uint64_t next_ping_ = 0;
  std::map<std::uint64_t, double> pings_;  ///< sequence -> Unix time sent
  ClockEstimate clock_;
};

/// An agent that connected back and proved its sealed channel: its identity ("node=K",
/// "host=NAME"), its socket, the sealed codec, and its first message (the hello).
struct ArrivedAgent {
  std::string identity;
  int fd = -1;
  MessageCodec codec;
  nlohmann::json hello;
};

/// Limits on connections that have not proven they are this run's agents: an agent connects once
/// and proves itself in one round trip, so anything else is an intruder and must not grow the
/// launcher's memory or crowd the agents out.
inline constexpr std::size_t kMaxPendingAgents = 64;           ///< unproven at once; past it the oldest is shed
inline constexpr std::size_t kMaxPendingAgentBytes = 16u << 10;  ///< buffered per unproven connection
inline constexpr auto kPendingAgentDeadline = std::chrono::seconds(10);  ///< to prove itself
inline constexpr auto kPendingAgentGrace = std::chrono::milliseconds(250);  ///< never shed younger than this

class AgentRendezvous {
 public:
  /// Listens on `address` (a free port) for agents connecting back. Throws LaunchError naming it.
  explicit AgentRendezvous(const std::string& address);
  ~AgentRendezvous();
  AgentRendezvous(const AgentRendezvous&) = delete;
  AgentRendezvous& operator=(const AgentRendezvous&) = delete;

  int listen_fd() const { return listen_fd_; }
  /// "ADDR:PORT", what the agents are told to connect to.
  std::string address() const;
  /// A token line the transport relayed: agent `identity` will seal its channel with `token`.
  void add_token(const std::string& identity, const std::string& token);
  /// Takes in waiting connections.
  void accept_all();
  /// The connections still proving themselves, to poll.
  std::vector<int> pending_fds() const;
  /// Reads pending connection `fd`; an agent whose first sealed message verified comes back. A
  /// connection that fails (wrong token, garbage) is closed: another may still be the real agent.
  std::optional<ArrivedAgent> read_pending(int fd, std::vector<std::string>& refused);
  /// Closes the connections that did not prove themselves within kPendingAgentDeadline; how many.
  std::size_t drop_expired();
  /// Connections shed or dropped unproven so far (counted, not each logged: a flood would be noise).
  std::size_t dropped() const { return dropped_; }

 private:
  struct Pending {
    AgentClock::time_point accepted_at;
    MessageCodec codec;
    std::string identity;
    std::string agent_nonce, launcher_nonce;
    bool answered = false;
  };
  bool try_answer(int fd, Pending& p);
  bool shed_oldest();

  int listen_fd_ = -1;
  std::string host_;
  std::map<std::string, std::string> tokens_;  ///< identity -> token
  std::map<int, Pending> pending_;
  std::size_t dropped_ = 0;
};

}  // namespace shardscope::launcher
