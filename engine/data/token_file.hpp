#pragma once
// A memory-mapped file of token ids. nanoGPT's prepare.py writes raw uint16 (train.bin); llm.c
// writes a 256 x int32 header (magic 20240520, version 1 = uint16 tokens, 2 = uint32, then the
// token count) before the tokens. The header is detected; a raw file's width is given.

#include <cstdint>
#include <string>

namespace shardscope::engine {

enum class TokenFormat {
  kAuto,    ///< llm.c header if present, else raw uint16 (nanoGPT)
  kUint16,  ///< raw uint16, or an llm.c file of version 1
  kUint32,  ///< raw uint32, or an llm.c file of version 2
};

/// Parses "auto", "uint16" or "uint32"; throws DataError naming `what`.
TokenFormat parse_token_format(const std::string& text, const std::string& what);

class TokenFile {
 public:
  /// Maps the file and reads its layout; throws DataError naming the file if it is missing,
  /// empty, misaligned, or its llm.c header disagrees with its size or with `format`.
  TokenFile(const std::string& path, TokenFormat format);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const std::string& path() const { return path_; }
  std::int64_t num_tokens() const { return num_tokens_; }
  int bytes_per_token() const { return bytes_per_token_; }
  bool has_llmc_header() const { return header_; }

  /// Copies tokens [start, start + count) into `out` as int64; throws DataError naming the file
  /// and position of the first token >= `vocab` (vocab 0: no check) or a range past the end.
  void read(std::int64_t start, std::int64_t count, std::int64_t vocab, std::int64_t* out) const;

 private:
  std::string path_;
  const unsigned char* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t data_offset_ = 0;
  std::int64_t num_tokens_ = 0;
  int bytes_per_token_ = 2;
  bool header_ = false;
};

}  // namespace shardscope::engine
