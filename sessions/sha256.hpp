#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free: the collector's
// challenge-response and the node agents' private channel need exactly these, and the GPU machine
// has no OpenSSL headers. Checked against the FIPS 180-2 examples and the RFC 4231 test vectors
// (tests/sessions/sha256_test.cpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::sessions {

inline constexpr std::size_t kSha256Bytes = 32;
using Sha256Digest = std::array<std::uint8_t, kSha256Bytes>;

/// Incremental SHA-256: update() any number of times, then finish() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  Sha256Digest finish();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> block_{};
  std::size_t block_used_ = 0;
  std::uint64_t total_bytes_ = 0;
};

/// Incremental HMAC-SHA256 with a key of any length (longer than 64 bytes: hashed first).
class HmacSha256 {
 public:
  explicit HmacSha256(std::string_view key);
  void update(const void* data, std::size_t size) { inner_.update(data, size); }
  void update(std::string_view data) { inner_.update(data); }
  Sha256Digest finish();

 private:
  Sha256 inner_, outer_;
};

/// SHA-256 of `data`.
Sha256Digest sha256(std::string_view data);
/// HMAC-SHA256 of `message` under `key`.
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);
/// Equality that takes the same time wherever the first difference is (for MACs).
bool constant_time_equal(const Sha256Digest& a, const Sha256Digest& b);
/// The digest as 64 lowercase hex digits.
std::string digest_hex(const Sha256Digest& digest);

}  // namespace shardscope::sessions
