#include "launcher/agent_channel.hpp"

#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "sessions/sha256.hpp"

namespace shardscope::launcher {
namespace {

constexpr std::size_t kTagBytes = 32;

std::string digest_bytes(const sessions::Sha256Digest& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::string key(std::string_view token, std::string_view direction, std::string_view purpose,
                std::string_view launcher_nonce, std::string_view agent_nonce) {
  sessions::HmacSha256 mac(token);
  for (std::string_view part : {std::string_view("shardscope node channel v1"), direction, purpose, launcher_nonce,
                                agent_nonce}) {
    const std::uint32_t length = static_cast<std::uint32_t>(part.size());
    mac.update(&length, sizeof length);
    mac.update(part);
  }
  return digest_bytes(mac.finish());
}

// The keystream of one message: HMAC(key, sequence | block) for block 0, 1, ... (a PRF in counter
// mode, so every message has its own stream and no stream is ever reused).
void apply_keystream(const std::string& key, std::uint64_t sequence, std::string& data) {
  for (std::uint64_t block = 0; block * kTagBytes < data.size(); ++block) {
    sessions::HmacSha256 mac(key);
    mac.update(&sequence, sizeof sequence);
    mac.update(&block, sizeof block);
    const auto stream = mac.finish();
    const std::size_t start = static_cast<std::size_t>(block) * kTagBytes;
    for (std::size_t i = 0; i < kTagBytes && start + i < data.size(); ++i) data[start + i] ^= static_cast<char>(stream[i]);
  }
}

sessions::Sha256Digest tag_of(const std::string& key, std::uint64_t sequence, std::string_view ciphertext) {
  sessions::HmacSha256 mac(key);
  mac.update(&sequence, sizeof sequence);
  mac.update(ciphertext);
  return mac.finish();
}

}  // namespace

SealKeys derive_seal_keys(std::string_view token, std::string_view direction, std::string_view launcher_nonce,
                          std::string_view agent_nonce) {
  return {key(token, direction, "encrypt", launcher_nonce, agent_nonce),
          key(token, direction, "mac", launcher_nonce, agent_nonce)};
}

std::string seal_message(const SealKeys& keys, std::uint64_t sequence, std::string_view plaintext) {
  std::string data(plaintext);
  apply_keystream(keys.encrypt, sequence, data);
  return data + digest_bytes(tag_of(keys.mac, sequence, data));
}

std::optional<std::string> unseal_message(const SealKeys& keys, std::uint64_t sequence, std::string_view sealed) {
  if (sealed.size() < kTagBytes) return std::nullopt;
  const std::string_view ciphertext = sealed.substr(0, sealed.size() - kTagBytes);
  sessions::Sha256Digest tag{};
  std::memcpy(tag.data(), sealed.data() + ciphertext.size(), kTagBytes);
  if (!sessions::constant_time_equal(tag, tag_of(keys.mac, sequence, ciphertext))) return std::nullopt;
  std::string data(ciphertext);
  apply_keystream(keys.encrypt, sequence, data);
  return data;
}

void MessageCodec::feed(const char* data, std::size_t size) { buffer_.append(data, size); }

std::optional<nlohmann::json> MessageCodec::next() {
  if (buffer_.size() < 4) return std::nullopt;
  std::uint32_t length = 0;
  std::memcpy(&length, buffer_.data(), 4);
  if (length > max_frame_bytes_)
    throw ChannelError("a frame of " + std::to_string(length) + " bytes (not a ShardScope node agent stream?)");
  if (buffer_.size() < 4 + static_cast<std::size_t>(length)) return std::nullopt;
  std::string payload = buffer_.substr(4, length);
  buffer_.erase(0, 4 + static_cast<std::size_t>(length));
  if (sealed_) {
    auto opened = unseal_message(incoming_, received_++, payload);
    if (!opened) throw ChannelError("a frame that fails its authentication tag (not from this run's peer)");
    payload = std::move(*opened);
  }
  auto message = nlohmann::json::parse(payload, nullptr, false);
  if (message.is_discarded() || !message.is_object() || !message.contains("type"))
    throw ChannelError("a frame that is not a JSON message");
  return message;
}

std::string MessageCodec::encode(const nlohmann::json& message) {
  std::string payload = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (sealed_) payload = seal_message(outgoing_, sent_++, payload);
  const std::uint32_t length = static_cast<std::uint32_t>(payload.size());
  std::string frame(reinterpret_cast<const char*>(&length), 4);
  return frame + payload;
}

void MessageCodec::seal(SealKeys outgoing, SealKeys incoming) {
  outgoing_ = std::move(outgoing);
  incoming_ = std::move(incoming);
  sealed_ = true;
}

std::optional<std::pair<std::string, std::string>> parse_agent_token_line(const std::string& line) {
  const auto at = line.find(kAgentTokenMarker);
  if (at == std::string::npos) return std::nullopt;
  std::istringstream in(line.substr(at + std::strlen(kAgentTokenMarker)));
  std::string id, token;
  if (!(in >> id >> token) || token.size() < 32) return std::nullopt;
  return std::make_pair(id, token);
}

// Writes in pieces of at most PIPE_BUF after poll() said there is room, so a write never blocks:
// when the launcher's side stops reading (a dead link whose sshd keeps the session open), the
// agent learns it within kSendTimeoutMs instead of hanging with its ranks still running.
void BlockingChannel::send(const nlohmann::json& message) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  const std::string bytes = codec_.encode(message);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kSendTimeoutMs);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out_fd_, POLLOUT, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) throw ChannelError("the launcher stopped reading for " + std::to_string(kSendTimeoutMs / 1000) + " s");
    if (p.revents & (POLLERR | POLLHUP)) throw ChannelError("the launcher's channel is gone");
    const std::size_t piece = std::min<std::size_t>(bytes.size() - sent, PIPE_BUF);
    ssize_t n = ::send(out_fd_, bytes.data() + sent, piece, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == ENOTSOCK) n = ::write(out_fd_, bytes.data() + sent, piece);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) throw ChannelError(std::string("the launcher's channel is gone: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
}

std::optional<nlohmann::json> BlockingChannel::receive(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (auto message = codec_.next()) return message;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{in_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[64 << 10];
    const ssize_t n = ::read(in_fd_, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) throw ChannelError("the launcher's channel closed");
    codec_.feed(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace shardscope::launcher
