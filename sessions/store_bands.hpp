#pragma once
// Internal to the sessions library: schema 12's stored bands (issue 35), so the Sessions page reads
// a 1,024-rank x 10,000-step session's bands as 10,000 rows a metric instead of the rows of every
// step whose ranks differ (5.9 M step times on big10, 2.4-3.9 s):
//
//   step_bands (session_id, metric, step)   the band across ranks of one steps column at one step,
//                                           as rank_band() makes it of the rows (min, median, max,
//                                           the ranks at the ends, how many ranks have a finite
//                                           value), and how many rows the step had then
//
// A band is exact where `rows` equals step_stats.ranks of the step (read in one snapshot); the
// reader reads the rows of any other step. The store writer keeps it exact as rows of a step
// arrive over many commits: it keeps the running bands of the latest steps it wrote (read from the
// file once when a step is new to it) and rewrites a step's bands at each commit that touched it.
// docs/sessions.md ("Pre-aggregates") says what the table holds.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/rank_bands.hpp"

namespace shardscope::sessions {

class SqliteDb;
class Store;

/// The schema-12 table, empty (the migration's DDL).
std::string step_bands_schema_sql();
/// Fills step_bands from the steps rows of every session, in one pass (the migration to schema 12).
void fill_step_bands_from_rows(SqliteDb& db);
/// True when `store` has step_bands (schema 12 or later); a read-only older file has not.
bool has_step_bands(Store& store);
/// True when `metric`'s column has stored bands.
bool has_stored_bands(Metric metric);

/// One stored band and the step's row count it was made from.
struct StoredBand {
  RankBand band;  ///< band.ranks == 0: no rank has a finite value (no band to draw)
  std::int64_t rows = 0;
};

/// Every stored band of one metric of a session, in step order.
std::vector<StoredBand> load_stored_bands(SqliteDb& db, std::int64_t session_id, Metric metric);

/// The store writer's side: the step rows of a batch go in with add_step() (`replaced`: the row
/// replaced one the file had); flush() (inside the writer's transaction, after the rows are
/// written) rewrites the bands of every step they touched; clear() forgets everything after a
/// rollback.
class StepBandsAccumulator {
 public:
  explicit StepBandsAccumulator(SqliteDb& db);
  ~StepBandsAccumulator();
  void add_step(std::int64_t session, const StepMetrics& m, bool replaced);
  void flush();
  void clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::sessions
