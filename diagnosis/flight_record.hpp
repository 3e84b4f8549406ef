#pragma once
// PyTorch's collective flight recorder, read after the fact. With TORCH_NCCL_TRACE_BUFFER_SIZE (or
// TORCH_FR_BUFFER_SIZE) set, every rank keeps a ring of its latest collectives, and with
// TORCH_NCCL_DUMP_ON_TIMEOUT=1 NCCL's watchdog writes it at a timeout to one file per rank
// (TORCH_NCCL_DEBUG_INFO_TEMP_FILE + rank, by default /tmp/nccl_trace_rank_N); gloo records it too
// and a script gets it from torch._C._distributed_c10d._dump_fr_trace(). The file is a pickle of a
// dict (format "2.x"; PyTorch 2.11 writes "2.10"): version, pg_config, pg_status and entries, each
// entry a collective with its group, its number in the group (collective_seq_id), profiling_name
// ("nccl:all_reduce"), the time it was created, input sizes and dtypes, its state (scheduled,
// started, completed), whether it was retired, and the Python frames that issued it. The JSON
// variant (_dump_fr_trace_json) holds the same keys but no frames, and writes 0 for an unknown time. torch's own reader is
// torch/distributed/flight_recorder/components/loader.py.
//
// The dump is untrusted input: the pickle goes through the checkpoints library's allow-list
// reader (nothing is executed, memory and time are linear in the input) and every field is
// checked, so a damaged or hostile file is an ImportError naming the file and the entry.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/hang_diagnosis.hpp"
#include "sessions/events.hpp"

namespace shardscope::diagnosis {

/// One rank's dump, decoded. Its collectives are CollectiveMarks: group "<desc> (pg <name>)", the
/// collective_seq_id as sequence, op without the backend prefix, bytes from the input sizes and
/// dtypes, tag = where the rank's Python code issued it ("train.py:41 in step"; none from JSON), step -1 (the
/// recorder knows no optimizer step), entered at time_created; a collective completed or retired
/// has left_at (its completion time when the dump has one, else its creation time).
struct FlightRecordDump {
  std::string file;
  int rank = -1;
  std::string format;   ///< "pickle" or "json"
  std::string version;  ///< the dump's format version, "2.10"
  std::vector<sessions::CollectiveMark> collectives;   ///< in record order; group_ranks as pg_config gives them
  std::int64_t point_to_point = 0;                     ///< send/recv entries: not judged (no group-wide order)
  int world_size_hint = 0;                             ///< the largest member list in pg_config; 0 = none
  std::map<std::string, std::string> group_status;     ///< group -> "last enqueued #6, last completed #5"
};

/// Decodes one rank's dump (pickle, or JSON when the file starts with '{'). Throws
/// sessions::ImportError naming `file`: not a pickle, damaged, a format other than 2.x, a field
/// missing or of the wrong type (with the entry's index).
FlightRecordDump decode_flight_record(const std::string& bytes, const std::string& file, int rank);

/// The rank torch's dump name gives: its trailing digits ("nccl_trace_rank_3" -> 3); nullopt when
/// the name does not end in digits.
std::optional<int> flight_record_rank(const std::string& file);

/// The hang diagnosis of a run's dumps (diagnose_hang on their collectives). A group whose members
/// pg_config does not list (gloo records none) spans every rank for the default group ("pg 0")
/// and the ranks that recorded it otherwise. `run.world_size` is raised to what the dumps imply.
/// When no collective is open on any rank the finding is kind "flight_record", severity info.
/// The evidence ends with one line per dump (file, format, collectives, each group's status).
sessions::Finding diagnose_flight_records(const std::vector<FlightRecordDump>& dumps, RunPicture run);

/// Every dump's collectives with their groups' members filled in (as diagnose_flight_records
/// judges them), for storing as a session's collective marks. The default group spans
/// max(world_size, flight_record_world_size(dumps)) ranks.
std::vector<sessions::CollectiveMark> flight_record_marks(const std::vector<FlightRecordDump>& dumps, int world_size = 0);

/// The world size the dumps imply: the highest rank + 1, or pg_config's largest group.
int flight_record_world_size(const std::vector<FlightRecordDump>& dumps);

}  // namespace shardscope::diagnosis
