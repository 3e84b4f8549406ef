#pragma once
// CRC-32 (IEEE 802.3, the zip format's checksum; reflected polynomial 0xEDB88320), computed
// eight bytes at a time (slicing-by-8) so that checking a checkpoint costs about as much as
// reading it.

#include <cstddef>
#include <cstdint>

namespace shardscope::checkpoints {

/// Continues `crc` (0 to start) over `size` bytes at `data`.
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t size);

/// CRC-32 of one buffer.
inline std::uint32_t crc32(const void* data, std::size_t size) { return crc32_update(0, data, size); }

}  // namespace shardscope::checkpoints
