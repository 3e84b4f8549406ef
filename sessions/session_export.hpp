#pragma once
// Exporting sessions for other tools: one CSV file per table (pandas, spreadsheets) or one JSON
// document. Files are written under a temporary name and renamed, so a reader never sees half
// (atomic_output.hpp); a target that is not a regular file is refused, never replaced.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope::sessions {

class Store;

struct ExportResult {
  std::vector<std::string> files;  ///< what was written
  std::size_t rows = 0;            ///< data rows over all tables
};

/// The tables an export contains, in order: sessions, ranks, tags, steps, timers, comms,
/// activities, nvtx_ranges, logs.
const std::vector<std::string>& export_table_names();

/// Writes <table>.csv for every table into `directory` (created if missing; existing files of
/// those names are replaced). Throws StoreError(kStorage) naming the path on I/O failure.
ExportResult export_csv(Store& store, const std::vector<std::int64_t>& session_ids, const std::string& directory);

/// Writes one JSON document {"schema": "shardscope.sessions-export/1", "sessions": [...]} to `out`.
ExportResult export_json(Store& store, const std::vector<std::int64_t>& session_ids, std::ostream& out);

/// Same, into the file `path` (atomically, mode 0600). An existing `path` that is not a regular
/// file (symlink, FIFO, device) is refused with StoreError(kInvalidArgument), never replaced.
ExportResult export_json_file(Store& store, const std::vector<std::int64_t>& session_ids, const std::string& path);

}  // namespace shardscope::sessions
