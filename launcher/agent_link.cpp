#include "launcher/agent_link.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "launcher/launch_error.hpp"
#include "sessions/net_address.hpp"
#include "launcher/node_job.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;

using sessions::unix_now;

// Reads what `fd` has into `codec`, never holding more than `max_buffered` bytes (an unproven peer
// gets a small buffer); false at end of stream. Throws ChannelError when the cap is reached.
bool read_into(int fd, MessageCodec& codec, std::size_t max_buffered = std::size_t(-1)) {
  char buffer[64 << 10];
  for (int turn = 0; turn < 16; ++turn) {
    if (codec.buffered_bytes() >= max_buffered)
      throw ChannelError("sent more than " + std::to_string(max_buffered) + " bytes before proving itself");
    const std::size_t room = std::min(sizeof buffer, max_buffered - codec.buffered_bytes());
    const ssize_t n = ::read(fd, buffer, room);
    if (n > 0) {
      codec.feed(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    return false;
  }
  return true;
}

void write_some(int fd, std::string& outbox) {
  while (!outbox.empty()) {
    const ssize_t n = ::send(fd, outbox.data(), outbox.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    const ssize_t w = n < 0 && errno == ENOTSOCK ? ::write(fd, outbox.data(), outbox.size()) : n;
    if (w > 0) {
      outbox.erase(0, static_cast<std::size_t>(w));
      continue;
    }
    return;  // full (EAGAIN) or broken: a broken channel shows as end of stream on the read side
  }
}

}  // namespace

void ClockEstimate::add(double sent_at, double agent_time, double received_at) {
  const double rtt = received_at - sent_at;
  if (rtt < 0) return;
  if (!offset_s || rtt < round_trip_s) {
    offset_s = agent_time - (sent_at + received_at) / 2;
    round_trip_s = rtt;
  }
}

AgentLink::AgentLink(AgentLink&& other) noexcept { *this = std::move(other); }

AgentLink& AgentLink::operator=(AgentLink&& other) noexcept {
  if (this == &other) return *this;
  close();
  last_heard = other.last_heard;
  read_fd_ = std::exchange(other.read_fd_, -1);
  write_fd_ = std::exchange(other.write_fd_, -1);
  owns_ = std::exchange(other.owns_, false);
  ended_ = other.ended_;
  codec_ = std::move(other.codec_);
  outbox_ = std::move(other.outbox_);
  next_ping_ = other.next_ping_;
  pings_ = std::move(other.pings_);
  clock_ = other.clock_;
  return *this;
}

void AgentLink::attach(int read_fd, int write_fd, bool owns, MessageCodec codec) {
  read_fd_ = read_fd;
  write_fd_ = write_fd;
  owns_ = owns;
  codec_ = std::move(codec);
  last_heard = AgentClock::now();
}

std::vector<json> AgentLink::read_available() {
  if (ended_) throw ChannelError("the agent's channel closed");
  std::vector<json> messages;
  const bool open = read_into(read_fd_, codec_);
  while (auto message = codec_.next()) messages.push_back(std::move(*message));
  if (!messages.empty()) last_heard = AgentClock::now();
  if (!open) {
    ended_ = true;  // what arrived before the end is delivered first; the next read reports the end
    if (messages.empty()) throw ChannelError("the agent's channel closed");
  }
  return messages;
}

void AgentLink::send(const json& message) {
  if (write_fd_ < 0) return;
  outbox_ += codec_.encode(message);
  write_some(write_fd_, outbox_);
}

void AgentLink::flush() {
  if (write_fd_ >= 0) write_some(write_fd_, outbox_);
}

void AgentLink::ping() {
  json m = message_of("ping");
  m["seq"] = next_ping_;
  pings_[next_ping_++] = unix_now();
  send(m);
}

bool AgentLink::pong(const json& message) {
  const auto seq = message.value("seq", static_cast<std::uint64_t>(-1));
  const auto it = pings_.find(seq);
  if (it == pings_.end() || !message.contains("time") || !message.at("time").is_number()) return false;
  clock_.add(it->second, message.at("time").get<double>(), unix_now());
  pings_.erase(it);
  return true;
}

void AgentLink::close() {
  if (owns_) {
    if (read_fd_ >= 0) ::close(read_fd_);
    if (write_fd_ >= 0 && write_fd_ != read_fd_) ::close(write_fd_);
  }
  read_fd_ = write_fd_ = -1;
  outbox_.clear();
}

AgentLink::~AgentLink() { close(); }

AgentRendezvous::AgentRendezvous(const std::string& address) : host_(address) {
  listen_fd_ = sessions::bind_listener(address, 0);
  if (listen_fd_ < 0)
    throw LaunchError(LaunchError::Kind::kEnvironment, "cannot listen on " + address + " for the node agents: " +
                                                           std::strerror(errno));
  ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);  // accept_all() takes what is there
}

AgentRendezvous::~AgentRendezvous() {
  for (auto& [fd, pending] : pending_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string AgentRendezvous::address() const {
  const std::string shown = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  return shown + ":" + std::to_string(sessions::bound_port(listen_fd_));
}

void AgentRendezvous::add_token(const std::string& identity, const std::string& token) {
  tokens_[identity] = token;
  for (auto& [fd, pending] : pending_)
    if (pending.identity == identity && !pending.answered) try_answer(fd, pending);
}

// Sheds the oldest unproven connection when it is past the grace (an idle or slow-loris intruder:
// an agent proves itself in one round trip); false when all are younger.
bool AgentRendezvous::shed_oldest() {
  auto oldest = pending_.end();
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (oldest == pending_.end() || it->second.accepted_at < oldest->second.accepted_at) oldest = it;
  if (oldest == pending_.end() || AgentClock::now() - oldest->second.accepted_at < kPendingAgentGrace) return false;
  ::close(oldest->first);
  pending_.erase(oldest);
  ++dropped_;
  return true;
}

void AgentRendezvous::accept_all() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if ((errno == EMFILE || errno == ENFILE) && shed_oldest()) continue;
      return;
    }
    if (pending_.size() >= kMaxPendingAgents && !shed_oldest()) {
      ::close(fd);  // every unproven connection is young: this one tries again (agents retry their connect)
      ++dropped_;
      continue;
    }
    Pending p;
    p.accepted_at = AgentClock::now();
    p.codec.set_max_frame_bytes(kMaxPendingAgentBytes);
    pending_.emplace(fd, std::move(p));
  }
}

std::size_t AgentRendezvous::drop_expired() {
  const auto now = AgentClock::now();
  std::size_t dropped = 0;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now - it->second.accepted_at < kPendingAgentDeadline) {
      ++it;
      continue;
    }
    ::close(it->first);
    it = pending_.erase(it);
    ++dropped;
  }
  dropped_ += dropped;
  return dropped;
}

std::vector<int> AgentRendezvous::pending_fds() const {
  std::vector<int> fds;
  for (const auto& [fd, pending] : pending_) fds.push_back(fd);
  return fds;
}

// Once the agent's hello is in and its token known: our nonce back, and both directions sealed.
bool AgentRendezvous::try_answer(int fd, Pending& p) {
  const auto token = tokens_.find(p.identity);
  if (token == tokens_.end()) return false;  // its token line has not come through the transport yet
  p.launcher_nonce = sessions::hex_encode(sessions::random_bytes(32));
  json answer = message_of("launcher");
  answer["nonce"] = p.launcher_nonce;
  std::string bytes = p.codec.encode(answer);
  write_some(fd, bytes);
  p.codec.seal(derive_seal_keys(token->second, "launcher", p.launcher_nonce, p.agent_nonce),
               derive_seal_keys(token->second, "agent", p.launcher_nonce, p.agent_nonce));
  p.answered = true;
  return true;
}

std::optional<ArrivedAgent> AgentRendezvous::read_pending(int fd, std::vector<std::string>& refused) {
  auto it = pending_.find(fd);
  if (it == pending_.end()) return std::nullopt;
  Pending& p = it->second;
  try {
    const bool open = read_into(fd, p.codec, kMaxPendingAgentBytes + 4);
    if (p.identity.empty()) {
      const auto hello = p.codec.next();
      if (hello) {
        if (hello->value("type", "") != "agent" || !hello->contains("id") || !hello->contains("nonce"))
          throw ChannelError("a connection that is not a node agent");
        p.identity = hello->at("id").get<std::string>();
        p.agent_nonce = hello->at("nonce").get<std::string>();
      }
    }
    if (!p.identity.empty() && !p.answered) try_answer(fd, p);
    if (p.answered)
      if (auto first = p.codec.next()) {
        p.codec.set_max_frame_bytes(kMaxAgentFrameBytes);  // proven: a job's frames may be larger
        ArrivedAgent agent{p.identity, fd, std::move(p.codec), std::move(*first)};
        pending_.erase(it);
        return agent;
      }
    if (!open) throw ChannelError("closed before proving it is this run's agent");
  } catch (const std::exception& e) {
    refused.push_back((p.identity.empty() ? std::string("a connection") : "a connection claiming " + p.identity) +
                      ": " + e.what());
    ::close(fd);
    pending_.erase(it);
  }
  return std::nullopt;
}

}  // namespace shardscope::launcher
