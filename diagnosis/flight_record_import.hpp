#pragma once
// `shardscope sessions import --flight-record`: a run's PyTorch flight recorder dumps (one file per
// rank, flight_record.hpp) read from files or a folder, diagnosed, and stored: the collectives as
// the session's collective marks and the diagnosis as a finding, in a new session or in one the
// store already has (a run `watch` recorded, whose hosts then name the ranks).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/flight_record.hpp"
#include "sessions/store.hpp"

namespace shardscope::diagnosis {

/// Dumps larger than this are refused with their size (a 20,000-entry ring with stacks is ~50 MiB).
inline constexpr std::size_t kMaxFlightRecordBytes = std::size_t{256} << 20;

/// A file or folder given on the command line, with the rank when the name does not end in it.
struct FlightRecordInput {
  std::optional<int> rank;
  std::string path;
};

/// Every rank's dump: a file as named, a folder as its files whose names end in a rank (one name
/// prefix, as torch writes them). Throws sessions::ImportError naming the file: unreadable, too
/// large, damaged (decode_flight_record), no rank in its name, two dumps of one rank, a folder
/// holding none or dumps of several prefixes. `newest_write` gets the latest modification time
/// (Unix seconds): when the dumps were written, the "now" of the diagnosis.
std::vector<FlightRecordDump> read_flight_records(const std::vector<FlightRecordInput>& inputs, double& newest_write);

struct FlightRecordImportOptions {
  std::optional<std::int64_t> session_id;  ///< add to this session; unset: a new one
  std::string name;                        ///< a new session's name (default "flight record <folder>")
  std::vector<std::string> tags;           ///< a new session's tags
};

struct FlightRecordImportResult {
  std::int64_t session_id = 0;
  std::string session_uid;
  bool new_session = false;
  std::size_t collectives = 0;  ///< marks stored
  sessions::Finding finding;
};

/// Diagnoses `dumps` (written at `dumped_at`) and stores marks and finding in one transaction.
/// Throws sessions::SessionsError when options.session_id is not in the store.
FlightRecordImportResult import_flight_records(sessions::Store& store, const std::vector<FlightRecordDump>& dumps,
                                               double dumped_at, const FlightRecordImportOptions& options);

}  // namespace shardscope::diagnosis
