#include "checkpoints/zip_archive.hpp"

#include <algorithm>
#include <cstring>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/crc32.hpp"

namespace shardscope::checkpoints {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndRecord = 0x06054b50;
constexpr std::uint32_t kZip64EndRecord = 0x06064b50, kZip64Locator = 0x07064b50, kDataDescriptor = 0x08074b50;
constexpr std::size_t kLocalHeaderSize = 30, kCentralHeaderSize = 46, kEndRecordSize = 22;
constexpr std::size_t kZip64EndRecordSize = 56, kZip64LocatorSize = 20;
constexpr std::uint64_t kAlignment = 64;  // PyTorchStreamWriter's kFieldAlignment
constexpr std::uint32_t k32Max = 0xFFFFFFFFu;
constexpr std::uint16_t k16Max = 0xFFFF;

std::uint16_t u16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t u32(const unsigned char* p) { return u16(p) | (static_cast<std::uint32_t>(u16(p + 2)) << 16); }
std::uint64_t u64(const unsigned char* p) { return u32(p) | (static_cast<std::uint64_t>(u32(p + 4)) << 32); }

void put16(std::vector<unsigned char>& b, std::uint16_t v) {
  b.push_back(static_cast<unsigned char>(v));
  b.push_back(static_cast<unsigned char>(v >> 8));
}
void put32(std::vector<unsigned char>& b, std::uint32_t v) {
  put16(b, static_cast<std::uint16_t>(v));
  put16(b, static_cast<std::uint16_t>(v >> 16));
}
void put64(std::vector<unsigned char>& b, std::uint64_t v) {
  put32(b, static_cast<std::uint32_t>(v));
  put32(b, static_cast<std::uint32_t>(v >> 32));
}
void put_bytes(std::vector<unsigned char>& b, const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }

// Reads the zip64 extended-information extra field (id 1): the 64-bit values of the fields the
// central header set to 0xFFFFFFFF, in the order size, compressed size, local header offset.
void read_zip64_extra(const unsigned char* extra, std::size_t length, ZipEntry& e, bool size_wide,
                      bool compressed_wide, bool offset_wide, const std::string& where) {
  std::size_t at = 0;
  while (at + 4 <= length) {
    const std::uint16_t id = u16(extra + at), size = u16(extra + at + 2);
    if (at + 4 + size > length) break;
    if (id == 1) {
      const unsigned char* p = extra + at + 4;
      std::size_t need = 8 * ((size_wide ? 1 : 0) + (compressed_wide ? 1 : 0) + (offset_wide ? 1 : 0));
      if (size < need) throw damaged(where, "entry '" + e.name + "' has a short zip64 extra field");
      if (size_wide) e.size = u64(p), p += 8;
      if (compressed_wide) p += 8;
      if (offset_wide) e.local_header_offset = u64(p);
      return;
    }
    at += 4 + size;
  }
  if (size_wide || compressed_wide || offset_wide)
    throw damaged(where, "entry '" + e.name + "' needs a zip64 extra field and has none");
}

}  // namespace

ZipReader::ZipReader(const std::string& path) : file_(path) {
  const std::uint64_t size = file_.size();
  if (size < kEndRecordSize) throw damaged(path, "is not a torch.save zip archive (only " + std::to_string(size) + " bytes)");
  // The end record sits in the last 22 + 65535 (longest comment) bytes.
  const std::uint64_t tail_size = std::min<std::uint64_t>(size, kEndRecordSize + 65535 + kZip64LocatorSize);
  std::vector<unsigned char> tail(static_cast<std::size_t>(tail_size));
  file_.read_at(size - tail_size, tail.size(), tail.data());
  std::int64_t at = static_cast<std::int64_t>(tail.size()) - static_cast<std::int64_t>(kEndRecordSize);
  for (; at >= 0; --at)
    if (u32(tail.data() + at) == kEndRecord &&
        static_cast<std::uint64_t>(at) + kEndRecordSize + u16(tail.data() + at + 20) == tail.size())
      break;
  if (at < 0) throw damaged(path, "is not a torch.save zip archive (no zip end record; truncated, or another format)");
  const unsigned char* end = tail.data() + at;
  if (u16(end + 4) != 0 || u16(end + 6) != 0) throw damaged(path, "is a multi-part zip archive, which torch.save never writes");
  std::uint64_t count = u16(end + 10), cd_size = u32(end + 12), cd_offset = u32(end + 16);
  const std::uint64_t end_offset = size - tail_size + static_cast<std::uint64_t>(at);
  if (end_offset >= kZip64LocatorSize && static_cast<std::size_t>(at) >= kZip64LocatorSize &&
      u32(end - kZip64LocatorSize) == kZip64Locator) {
    const std::uint64_t record = u64(end - kZip64LocatorSize + 8);
    if (record > end_offset || end_offset - record < kZip64EndRecordSize)
      throw damaged(path, "has a zip64 end record outside the file");
    unsigned char z[kZip64EndRecordSize];
    file_.read_at(record, sizeof z, z);
    if (u32(z) != kZip64EndRecord) throw damaged(path, "has a damaged zip64 end record");
    count = u64(z + 32);
    cd_size = u64(z + 40);
    cd_offset = u64(z + 48);
  } else if (count == k16Max || cd_size == k32Max || cd_offset == k32Max) {
    throw damaged(path, "needs a zip64 end record and has none");
  }
  if (cd_offset > end_offset || cd_size > end_offset - cd_offset)
    throw damaged(path, "has a central directory outside the file (truncated?)");
  if (count > cd_size / kCentralHeaderSize)
    throw damaged(path, "claims " + std::to_string(count) + " entries in a central directory of " +
                            std::to_string(cd_size) + " bytes");
  read_central_directory(cd_offset, cd_size, count);
}

void ZipReader::read_central_directory(std::uint64_t offset, std::uint64_t size, std::uint64_t count) {
  std::vector<unsigned char> cd(static_cast<std::size_t>(size));
  file_.read_at(offset, cd.size(), cd.data());
  std::size_t at = 0;
  entries_.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at + kCentralHeaderSize > cd.size() || u32(cd.data() + at) != kCentralHeader)
      throw damaged(path(), "has a damaged central directory (entry " + std::to_string(i) + ")");
    const unsigned char* h = cd.data() + at;
    const std::uint16_t flags = u16(h + 8), method = u16(h + 10);
    const std::size_t name_len = u16(h + 28), extra_len = u16(h + 30), comment_len = u16(h + 32);
    if (at + kCentralHeaderSize + name_len + extra_len + comment_len > cd.size())
      throw damaged(path(), "has a damaged central directory (entry " + std::to_string(i) + " runs past it)");
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderSize), name_len);
    e.crc32 = u32(h + 16);
    const std::uint32_t compressed = u32(h + 20);
    e.size = u32(h + 24);
    e.local_header_offset = u32(h + 42);
    read_zip64_extra(h + kCentralHeaderSize + name_len, extra_len, e, e.size == k32Max, compressed == k32Max,
                     e.local_header_offset == k32Max, path());
    if (flags & 1) throw damaged(path(), "entry '" + printable(e.name) + "' is encrypted");
    if (method != 0)
      throw damaged(path(), "entry '" + printable(e.name) + "' is compressed (method " + std::to_string(method) +
                                "); torch.save stores every record uncompressed");
    if (compressed != k32Max && compressed != e.size)
      throw damaged(path(), "entry '" + printable(e.name) + "' has different stored and original sizes");
    resolve_data_offset(e, offset);
    if (!by_name_.emplace(e.name, entries_.size()).second)
      throw damaged(path(), "holds two entries named '" + printable(e.name) + "'");
    entries_.push_back(std::move(e));
    at += kCentralHeaderSize + name_len + extra_len + comment_len;
  }
}

void ZipReader::resolve_data_offset(ZipEntry& e, std::uint64_t directory_offset) const {
  if (e.local_header_offset > directory_offset || directory_offset - e.local_header_offset < kLocalHeaderSize)
    throw damaged(path(), "entry '" + printable(e.name) + "' starts outside the file's data");
  unsigned char h[kLocalHeaderSize];
  file_.read_at(e.local_header_offset, sizeof h, h);
  if (u32(h) != kLocalHeader) throw damaged(path(), "entry '" + printable(e.name) + "' has no local header where the directory says");
  const std::uint64_t name_len = u16(h + 26), extra_len = u16(h + 28);
  if (name_len != e.name.size()) throw damaged(path(), "entry '" + printable(e.name) + "' has a different name in its local header");
  e.data_offset = e.local_header_offset + kLocalHeaderSize + name_len + extra_len;
  if (e.data_offset > directory_offset || e.size > directory_offset - e.data_offset)
    throw damaged(path(), "entry '" + printable(e.name) + "' (" + std::to_string(e.size) +
                              " bytes) runs past the end of the data (truncated?)");
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::vector<char> ZipReader::read(const ZipEntry& entry) const {
  std::vector<char> bytes(static_cast<std::size_t>(entry.size));
  file_.read_at(entry.data_offset, bytes.size(), bytes.data());
  if (crc32(bytes.data(), bytes.size()) != entry.crc32)
    throw damaged(path(), "record '" + printable(entry.name) + "' fails its CRC-32 check (the file is damaged)");
  return bytes;
}

void ZipReader::read_range(const ZipEntry& entry, std::uint64_t offset, std::size_t count, void* out) const {
  if (offset > entry.size || count > entry.size - offset)
    throw damaged(path(), "record '" + printable(entry.name) + "' is shorter than a tensor stored in it says");
  file_.read_at(entry.data_offset + offset, count, out);
}

void ZipReader::verify(const ZipEntry& entry) const {
  std::vector<char> buffer(std::min<std::uint64_t>(entry.size, 8u << 20));
  std::uint32_t crc = 0;
  for (std::uint64_t done = 0; done < entry.size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), entry.size - done));
    file_.read_at(entry.data_offset + done, n, buffer.data());
    crc = crc32_update(crc, buffer.data(), n);
    done += n;
  }
  if (crc != entry.crc32)
    throw damaged(path(), "record '" + printable(entry.name) + "' fails its CRC-32 check (the file is damaged)");
}

// ---------------------------------------------------------------------------------------------

void ZipWriter::add(const std::string& name, const void* data, std::size_t size) {
  begin(name, size);
  append(data, size);
  end();
}

void ZipWriter::begin(const std::string& name, std::uint64_t size) {
  const bool wide = size >= k32Max || out_.size() >= k32Max;
  std::vector<unsigned char> h;
  put32(h, kLocalHeader);
  put16(h, wide ? 45 : 20);  // version needed: 4.5 for zip64
  put16(h, 0x0808);          // sizes in a data descriptor; UTF-8 names
  put16(h, 0);               // stored
  put32(h, 0);               // time and date
  put32(h, 0);               // crc (in the descriptor)
  put32(h, wide ? k32Max : 0);
  put32(h, wide ? k32Max : 0);
  put16(h, static_cast<std::uint16_t>(name.size()));
  const std::size_t zip64_extra = wide ? 20 : 0;
  // "FB" padding so the data starts on a 64-byte boundary, as PyTorchStreamWriter aligns it
  // (torch.load(mmap=True) maps storages in place).
  const std::uint64_t unpadded = out_.size() + kLocalHeaderSize + name.size() + zip64_extra + 4;
  const auto padding = static_cast<std::uint16_t>((kAlignment - unpadded % kAlignment) % kAlignment);
  put16(h, static_cast<std::uint16_t>(zip64_extra + 4 + padding));
  put_bytes(h, name);
  if (wide) {
    put16(h, 1);
    put16(h, 16);
    put64(h, size);
    put64(h, size);
  }
  put16(h, 0x4246);  // "FB"
  put16(h, padding);
  h.insert(h.end(), padding, 'Z');
  records_.push_back({name, out_.size(), size, 0});
  out_.write(h.data(), h.size());
  open_ = true;
  expected_ = size;
  written_ = 0;
  crc_ = 0;
}

void ZipWriter::append(const void* data, std::size_t size) {
  out_.write(data, size);
  crc_ = crc32_update(crc_, data, size);
  written_ += size;
}

void ZipWriter::end() {
  if (!open_ || written_ != expected_)
    throw std::logic_error("ZipWriter: record '" + records_.back().name + "' got " + std::to_string(written_) +
                           " bytes, " + std::to_string(expected_) + " announced");
  open_ = false;
  records_.back().crc32 = crc_;
  const bool wide = expected_ >= k32Max || records_.back().offset >= k32Max;
  std::vector<unsigned char> d;
  put32(d, kDataDescriptor);
  put32(d, crc_);
  if (wide) {
    put64(d, expected_);
    put64(d, expected_);
  } else {
    put32(d, static_cast<std::uint32_t>(expected_));
    put32(d, static_cast<std::uint32_t>(expected_));
  }
  out_.write(d.data(), d.size());
}

void ZipWriter::finish() {
  const std::uint64_t cd_offset = out_.size();
  std::vector<unsigned char> cd;
  for (const auto& r : records_) {
    const bool size_wide = r.size >= k32Max, offset_wide = r.offset >= k32Max;
    put32(cd, kCentralHeader);
    put16(cd, 0);  // made by
    put16(cd, size_wide || offset_wide ? 45 : 20);
    put16(cd, 0x0808);
    put16(cd, 0);
    put32(cd, 0);
    put32(cd, r.crc32);
    put32(cd, size_wide ? k32Max : static_cast<std::uint32_t>(r.size));
    put32(cd, size_wide ? k32Max : static_cast<std::uint32_t>(r.size));
    put16(cd, static_cast<std::uint16_t>(r.name.size()));
    const std::uint16_t extra = static_cast<std::uint16_t>((size_wide ? 16 : 0) + (offset_wide ? 8 : 0));
    put16(cd, extra ? static_cast<std::uint16_t>(extra + 4) : 0);
    put16(cd, 0);  // comment
    put16(cd, 0);  // disk
    put16(cd, 0);  // internal attributes
    put32(cd, 0);  // external attributes
    put32(cd, offset_wide ? k32Max : static_cast<std::uint32_t>(r.offset));
    put_bytes(cd, r.name);
    if (extra) {
      put16(cd, 1);
      put16(cd, extra);
      if (size_wide) put64(cd, r.size), put64(cd, r.size);
      if (offset_wide) put64(cd, r.offset);
    }
  }
  const std::uint64_t cd_size = cd.size(), zip64_end = cd_offset + cd_size, count = records_.size();
  put32(cd, kZip64EndRecord);
  put64(cd, kZip64EndRecordSize - 12);
  put16(cd, 45);
  put16(cd, 45);
  put32(cd, 0);
  put32(cd, 0);
  put64(cd, count);
  put64(cd, count);
  put64(cd, cd_size);
  put64(cd, cd_offset);
  put32(cd, kZip64Locator);
  put32(cd, 0);
  put64(cd, zip64_end);
  put32(cd, 1);
  put32(cd, kEndRecord);
  put16(cd, 0);
  put16(cd, 0);
  put16(cd, static_cast<std::uint16_t>(std::min<std::uint64_t>(count, k16Max)));
  put16(cd, static_cast<std::uint16_t>(std::min<std::uint64_t>(count, k16Max)));
  put32(cd, static_cast<std::uint32_t>(std::min<std::uint64_t>(cd_size, k32Max)));
  put32(cd, static_cast<std::uint32_t>(std::min<std::uint64_t>(cd_offset, k32Max)));
  put16(cd, 0);
  out_.write(cd.data(), cd.size());
}

}  // namespace shardscope::checkpoints
