#pragma once
// TensorBoard event files read directly: the TFRecord framing (u64 length, masked CRC32C of the
// length, data, masked CRC32C of the data; both CRCs verified) and the few fields of the Event and
// Summary protobufs that hold scalars, decoded by hand (docs/sessions.md, "TensorBoard events").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sessions/import/monitor_series.hpp"

namespace shardscope::sessions {

/// CRC-32C (Castagnoli), as TFRecord uses it.
std::uint32_t crc32c(std::string_view data);
/// TFRecord's masked form of a CRC: rotate right by 15 and add 0xa282ead8.
std::uint32_t mask_crc(std::uint32_t crc);

/// The records of a TFRecord byte string, in order. A truncated last record is dropped when
/// `allow_truncated_tail` (a writer may be mid-record); `consumed` gets the bytes of whole records.
/// Throws ImportError naming the file and byte offset for a bad CRC or a record longer than the file.
std::vector<std::string_view> split_tfrecords(std::string_view bytes, const std::string& file,
                                              bool allow_truncated_tail = false, std::size_t* consumed = nullptr);

struct TfScalar {
  std::string tag;
  double value = 0;
};

/// The fields of one Event that matter here.
struct TfEvent {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;         ///< "brain.Event:2" in the first record
  std::vector<TfScalar> scalars;    ///< simple_value, or a scalar float/double tensor
};

/// Decodes one Event record; throws ImportError (naming `file` and `offset`) for malformed protobuf.
TfEvent decode_tf_event(std::string_view record, const std::string& file, std::size_t offset);

/// Every scalar of every event file ("events.out.tfevents.*") in `folder` and below (job folders),
/// grouped into series by tag, files in name order. Throws ImportError when there is none.
std::vector<MonitorSeries> read_tensorboard_folder(const std::string& folder);

/// The host named in an event file's name ("events.out.tfevents.<time>.<host>.<pid>.<n>"), or "".
std::string tensorboard_file_host(const std::string& file_name);

}  // namespace shardscope::sessions
