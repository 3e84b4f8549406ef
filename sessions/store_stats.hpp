#pragma once
// Internal to the sessions library: the pre-aggregates of schema 10 (issue 35), so the readers of a
// 1,024-rank x 10,000-step session read thousands of rows, not tens of millions:
//
//   step_stats   (session_id, step)          per step across ranks, for every steps column:
//                                            count, sum, min, max and the latest wall time
//   rank_stats   (session_id, rank)          per rank across steps: step time summed, peak and
//                                            reserved memory, time in collectives
//   timer_stats  (session_id, name_id, step) per timer and step across ranks: count, sum, min, max
//   comm_stats   (session_id, op, step)      per collective op and step: count, bytes, latency,
//                                            bandwidth sums, and the slowest rank's summed latency
//
// The store writer fills them as it commits (StatsAccumulator: in-memory deltas of a batch, one
// upsert per key at its end); the migration to schema 10 fills them from an older file's rows.
// docs/sessions.md ("Pre-aggregates") gives each definition.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class SqliteDb;
class Store;

/// The schema-10 tables, empty (the migration's DDL).
std::string stats_schema_sql();
/// Fills every stats table from the raw rows of every session (the migration to schema 10).
void fill_stats_from_rows(SqliteDb& db);
/// True when `store` has the stats tables (schema 10 or later); a read-only older file has not, and
/// its readers compute the same quantities from the raw rows.
bool has_stats(Store& store);

/// A batch's contribution to the stats tables, kept by the store writer between its inserts and
/// its commit. Rows that replaced an earlier row (a re-sent step or timer) mark their key, which
/// flush() recomputes from the raw rows instead of adding to it.
class StatsAccumulator {
 public:
  explicit StatsAccumulator(SqliteDb& db);
  ~StatsAccumulator();
  /// A step row was written; `replaced`: it replaced an earlier row of the same (step, rank).
  void add_step(std::int64_t session, const StepMetrics& m, bool replaced);
  void add_timer(std::int64_t session, std::int64_t name_id, std::int64_t step, double ms, bool replaced);
  void add_comm(std::int64_t session, const CommRecord& c);
  /// Writes the batch's deltas (inside the writer's transaction) and forgets them.
  void flush();
  /// Forgets the batch and what this writer knew of the file (its transaction rolled back).
  void clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::sessions
