#pragma once
// The zip container of torch.save's format (PyTorchStreamWriter): every record stored
// uncompressed, its data aligned to 64 bytes by an "FB" padding extra field, sizes and CRC-32 in
// a data descriptor after the data and in the central directory, and zip64 end records.
//
// The reader trusts nothing in the file: offsets and counts are checked against the file's size
// before anything is allocated, compressed or encrypted entries and duplicate names are refused,
// and a record's CRC-32 is checked when it is read whole.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints {

class AtomicFile;

struct ZipEntry {
  std::string name;
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
};

class ZipReader {
 public:
  /// Reads the central directory of `path`; throws CheckpointError naming the file and what is
  /// wrong (not a zip archive, truncated, a compressed or duplicate entry, an offset past its end).
  explicit ZipReader(const std::string& path);

  const std::string& path() const { return file_.path(); }
  std::uint64_t file_size() const { return file_.size(); }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  /// The entry called `name`, or null.
  const ZipEntry* find(const std::string& name) const;
  /// A whole record, its CRC-32 checked.
  std::vector<char> read(const ZipEntry& entry) const;
  /// `count` bytes of a record from `offset` (within it) into `out`; no CRC check.
  void read_range(const ZipEntry& entry, std::uint64_t offset, std::size_t count, void* out) const;
  /// Reads a record in pieces and checks its CRC-32 without holding it whole.
  void verify(const ZipEntry& entry) const;

 private:
  void read_central_directory(std::uint64_t offset, std::uint64_t size, std::uint64_t count);
  void resolve_data_offset(ZipEntry& entry, std::uint64_t directory_offset) const;

  RegularFile file_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, std::size_t> by_name_;
};

/// Writes a zip archive the way PyTorchStreamWriter does, streaming into an AtomicFile.
class ZipWriter {
 public:
  explicit ZipWriter(AtomicFile& out) : out_(out) {}
  /// A record of `size` bytes at `data`.
  void add(const std::string& name, const void* data, std::size_t size);
  /// A record written in pieces: begin(), append() until `size` bytes, end().
  void begin(const std::string& name, std::uint64_t size);
  void append(const void* data, std::size_t size);
  void end();
  /// The central directory and the (zip64) end records; the archive is complete after it.
  void finish();

 private:
  struct Record {
    std::string name;
    std::uint64_t offset = 0, size = 0;
    std::uint32_t crc32 = 0;
  };
  AtomicFile& out_;
  std::vector<Record> records_;
  bool open_ = false;
  std::uint64_t expected_ = 0, written_ = 0;
  std::uint32_t crc_ = 0;
};

}  // namespace shardscope::checkpoints
