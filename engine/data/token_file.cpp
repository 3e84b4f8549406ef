#include "engine/data/token_file.hpp"

#include <cerrno>
#include <cstring>

#include <sys/mman.h>

#include "configs/input_file.hpp"
#include "engine/data/data_error.hpp"

namespace shardscope::engine {
namespace {

constexpr std::int32_t kLlmcMagic = 20240520;  // llm.c's dev/data/data_common.py
constexpr std::size_t kLlmcHeaderBytes = 256 * sizeof(std::int32_t);

std::int32_t int32_at(const unsigned char* p) {
  std::int32_t v;
  std::memcpy(&v, p, sizeof v);  // the file is little-endian, as is every host we build for
  return v;
}

const char* format_name(TokenFormat format) {
  return format == TokenFormat::kUint16 ? "uint16" : format == TokenFormat::kUint32 ? "uint32" : "auto";
}

}  // namespace

TokenFormat parse_token_format(const std::string& text, const std::string& what) {
  if (text == "auto") return TokenFormat::kAuto;
  if (text == "uint16" || text == "u16") return TokenFormat::kUint16;
  if (text == "uint32" || text == "u32") return TokenFormat::kUint32;
  throw DataError(what + ": unknown token format '" + text + "'; expected auto, uint16 or uint32");
}

TokenFile::TokenFile(const std::string& path, TokenFormat format) : path_(path) {
  // Opened without blocking and refused unless a regular file: a FIFO or a device has no size to
  // map, and the map is bounded by the file's own size.
  const configs::InputFile file(path, "token file");
  map_bytes_ = static_cast<std::size_t>(file.size());
  if (map_bytes_ == 0) throw DataError(path + ": the token file is empty");
  void* map = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (map == MAP_FAILED) throw DataError(path + ": cannot map the token file (" + std::strerror(errno) + ")");
  map_ = static_cast<const unsigned char*>(map);
  header_ = map_bytes_ >= kLlmcHeaderBytes && int32_at(map_) == kLlmcMagic;
  try {
    if (header_) {
      const std::int32_t version = int32_at(map_ + 4), count = int32_at(map_ + 8);
      if (version != 1 && version != 2)
        throw DataError(path + ": llm.c header version " + std::to_string(version) + " is unknown (1 = uint16, 2 = uint32)");
      bytes_per_token_ = version == 1 ? 2 : 4;
      if (format != TokenFormat::kAuto && (format == TokenFormat::kUint16) != (version == 1))
        throw DataError(path + ": its llm.c header says version " + std::to_string(version) + " (" +
                        (version == 1 ? "uint16" : "uint32") + ") but " + format_name(format) +
                        " was asked for; drop the format or use auto");
      data_offset_ = kLlmcHeaderBytes;
      num_tokens_ = count;
      const std::size_t expected = kLlmcHeaderBytes + static_cast<std::size_t>(count) * bytes_per_token_;
      if (count < 0 || expected != map_bytes_)
        throw DataError(path + ": its llm.c header promises " + std::to_string(count) + " tokens (" +
                        std::to_string(expected) + " bytes with the header) but the file has " +
                        std::to_string(map_bytes_) + " bytes: truncated or not written by llm.c");
    } else {
      bytes_per_token_ = format == TokenFormat::kUint32 ? 4 : 2;
      if (map_bytes_ % bytes_per_token_ != 0)
        throw DataError(path + ": " + std::to_string(map_bytes_) + " bytes is not a whole number of " +
                        (bytes_per_token_ == 2 ? "uint16" : "uint32") + " tokens: truncated, or another format");
      num_tokens_ = static_cast<std::int64_t>(map_bytes_ / bytes_per_token_);
    }
  } catch (...) {
    ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
    throw;
  }
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
}

void TokenFile::read(std::int64_t start, std::int64_t count, std::int64_t vocab, std::int64_t* out) const {
  if (start < 0 || count < 0 || start + count > num_tokens_)
    throw DataError(path_ + ": tokens [" + std::to_string(start) + ", " + std::to_string(start + count) +
                    ") lie past the file's " + std::to_string(num_tokens_) + " tokens");
  const unsigned char* p = map_ + data_offset_ + static_cast<std::size_t>(start) * bytes_per_token_;
  for (std::int64_t i = 0; i < count; ++i, p += bytes_per_token_) {
    std::int64_t token;
    if (bytes_per_token_ == 2) {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      token = v;
    } else {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      token = v;
    }
    if (vocab > 0 && token >= vocab)
      throw DataError(path_ + ": token " + std::to_string(token) + " at position " + std::to_string(start + i) +
                      " is outside the model's vocabulary of " + std::to_string(vocab) +
                      "; the file was tokenized for a larger vocabulary (or has the wrong format)");
    out[i] = token;
  }
}

}  // namespace shardscope::engine
