#include "sessions/import/tensorboard_events.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <map>

#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {
namespace fs = std::filesystem;
namespace {

std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    table[i] = c;
  }
  return table;
}

std::uint64_t load_u64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
std::uint32_t load_u32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string where(const std::string& file, std::size_t offset) {
  return file + ": byte " + std::to_string(offset);
}

// Protocol buffer wire format, the subset these messages use (varint, 64-bit, length-delimited,
// 32-bit); every length is checked against what is left of the message.
class ProtoReader {
 public:
  ProtoReader(std::string_view data, const std::string& file, std::size_t offset)
      : data_(data), file_(file), offset_(offset) {}
  bool done() const { return pos_ >= data_.size(); }
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) fail("a varint runs past the end");
      const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail("a varint is longer than 10 bytes");
  }
  std::string_view bytes(std::size_t n) {
    if (n > data_.size() - pos_) fail("a field of " + std::to_string(n) + " bytes runs past the end");
    const auto out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::string_view delimited() { return bytes(static_cast<std::size_t>(varint())); }
  double fixed64_double() {
    double v;
    std::memcpy(&v, bytes(8).data(), 8);
    return v;
  }
  float fixed32_float() {
    float v;
    std::memcpy(&v, bytes(4).data(), 4);
    return v;
  }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0: varint(); return;
      case 1: bytes(8); return;
      case 2: delimited(); return;
      case 5: bytes(4); return;
      default: fail("wire type " + std::to_string(wire_type) + " (groups are not used by Event)");
    }
  }
  std::size_t offset() const { return offset_ + pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw ImportError(where(file_, offset_ + pos_) + ": malformed TensorBoard Event: " + what);
  }

 private:
  std::string_view data_;
  const std::string& file_;
  std::size_t offset_;
  std::size_t pos_ = 0;
};

// TensorProto: dtype (1), tensor_content (4), float_val (5), double_val (6); a scalar is one value.
std::optional<double> tensor_scalar(std::string_view data, const std::string& file, std::size_t offset) {
  ProtoReader r(data, file, offset);
  std::uint64_t dtype = 0;
  std::vector<double> values;
  std::string_view content;
  while (!r.done()) {
    const auto key = r.varint();
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (field == 1 && wire == 0) dtype = r.varint();
    else if (field == 4 && wire == 2) content = r.delimited();
    else if (field == 5 && wire == 5) values.push_back(r.fixed32_float());
    else if (field == 6 && wire == 1) values.push_back(r.fixed64_double());
    else if ((field == 5 || field == 6) && wire == 2) {  // packed
      ProtoReader packed(r.delimited(), file, r.offset());
      while (!packed.done()) values.push_back(field == 5 ? packed.fixed32_float() : packed.fixed64_double());
    } else r.skip(wire);
  }
  if (values.empty() && dtype == 1 && content.size() == 4) {  // DT_FLOAT
    float v;
    std::memcpy(&v, content.data(), 4);
    values.push_back(v);
  } else if (values.empty() && dtype == 2 && content.size() == 8) {  // DT_DOUBLE
    double v;
    std::memcpy(&v, content.data(), 8);
    values.push_back(v);
  }
  if (values.size() != 1) return std::nullopt;
  return values[0];
}

// Summary.Value: tag (1), simple_value (2, float), tensor (8); images, histograms are skipped.
std::optional<TfScalar> decode_value(std::string_view data, const std::string& file, std::size_t offset) {
  ProtoReader r(data, file, offset);
  TfScalar out;
  std::optional<double> value;
  while (!r.done()) {
    const auto key = r.varint();
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (field == 1 && wire == 2) out.tag = std::string(r.delimited());
    else if (field == 2 && wire == 5) value = r.fixed32_float();
    else if (field == 8 && wire == 2) {
      const std::size_t at = r.offset();
      value = tensor_scalar(r.delimited(), file, at);
    } else r.skip(wire);
  }
  if (!value || out.tag.empty()) return std::nullopt;
  out.value = *value;
  return out;
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  static const auto table = make_crc_table();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) crc = table[(crc ^ c) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t mask_crc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::vector<std::string_view> split_tfrecords(std::string_view bytes, const std::string& file,
                                              bool allow_truncated_tail, std::size_t* consumed) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t left = bytes.size() - pos;
    if (left < 12) {
      if (allow_truncated_tail) break;
      throw ImportError(where(file, pos) + ": a TFRecord header needs 12 bytes, the file has " +
                        std::to_string(left) + " left (truncated event file?)");
    }
    const std::uint64_t length = load_u64(bytes.data() + pos);
    if (mask_crc(crc32c(bytes.substr(pos, 8))) != load_u32(bytes.data() + pos + 8))
      throw ImportError(where(file, pos) + ": TFRecord length CRC mismatch: not a TensorBoard event file, "
                        "or damaged here");
    if (length > left - 12 || left - 12 - length < 4) {
      if (allow_truncated_tail) break;
      throw ImportError(where(file, pos) + ": a TFRecord of " + std::to_string(length) + " bytes runs past the end "
                        "of the file (truncated event file?)");
    }
    const auto data = bytes.substr(pos + 12, static_cast<std::size_t>(length));
    if (mask_crc(crc32c(data)) != load_u32(bytes.data() + pos + 12 + length))
      throw ImportError(where(file, pos) + ": TFRecord data CRC mismatch (damaged event file)");
    out.push_back(data);
    pos += 12 + static_cast<std::size_t>(length) + 4;
  }
  if (consumed) *consumed = pos;
  return out;
}

TfEvent decode_tf_event(std::string_view record, const std::string& file, std::size_t offset) {
  ProtoReader r(record, file, offset);
  TfEvent event;
  while (!r.done()) {
    const auto key = r.varint();
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (field == 1 && wire == 1) event.wall_time = r.fixed64_double();
    else if (field == 2 && wire == 0) event.step = static_cast<std::int64_t>(r.varint());
    else if (field == 3 && wire == 2) event.file_version = std::string(r.delimited());
    else if (field == 5 && wire == 2) {  // Summary: repeated Value (1)
      ProtoReader summary(r.delimited(), file, r.offset());
      while (!summary.done()) {
        const auto k = summary.varint();
        if ((k >> 3) == 1 && (k & 7) == 2) {
          const std::size_t at = summary.offset();
          if (auto scalar = decode_value(summary.delimited(), file, at)) event.scalars.push_back(*scalar);
        } else {
          summary.skip(static_cast<int>(k & 7));
        }
      }
    } else r.skip(wire);
  }
  return event;
}

std::string tensorboard_file_host(const std::string& file_name) {
  static const std::string kPrefix = "events.out.tfevents.";
  if (file_name.rfind(kPrefix, 0) != 0) return "";
  const std::string rest = file_name.substr(kPrefix.size());  // <time>.<host>.<pid>.<n>
  const auto first = rest.find('.');
  const auto last = rest.rfind('.');
  const auto pid = last == std::string::npos || last == 0 ? std::string::npos : rest.rfind('.', last - 1);
  if (first == std::string::npos || pid == std::string::npos || pid <= first) return "";
  return rest.substr(first + 1, pid - first - 1);
}

std::vector<MonitorSeries> read_tensorboard_folder(const std::string& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error))
    throw ImportError(folder + ": not a folder; pass the TensorBoard folder (output_path/job_name) of the run");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(folder, error); it != fs::recursive_directory_iterator(); ++it) {
    if (it.depth() > 3) it.disable_recursion_pending();
    if (it->is_regular_file() && it->path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      files.push_back(it->path());
  }
  if (files.empty())
    throw ImportError(folder + ": no TensorBoard event files (events.out.tfevents.*) here or below");
  std::sort(files.begin(), files.end());
  std::map<std::string, MonitorSeries> by_tag;
  for (const auto& path : files) {
    // The first record's header proves the format before a byte more is read: a 2 GB file of
    // something else is refused in its first 12 bytes, not after reading all of it.
    split_tfrecords(read_file_from(path.string(), 0, 12), path.string(), /*allow_truncated_tail=*/true);
    const std::string bytes = read_file_bytes(path.string(), kMaxTraceFileBytes);
    const auto records = split_tfrecords(bytes, path.string(), /*allow_truncated_tail=*/true);
    for (const auto record : records) {
      const auto event = decode_tf_event(record, path.string(), static_cast<std::size_t>(record.data() - bytes.data()));
      for (const auto& s : event.scalars) {
        auto& series = by_tag[s.tag];
        series.name = s.tag;
        series.points.push_back({event.step, s.value, event.wall_time});
      }
    }
  }
  std::vector<MonitorSeries> out;
  for (auto& [tag, series] : by_tag) out.push_back(std::move(series));
  return out;
}

}  // namespace shardscope::sessions
