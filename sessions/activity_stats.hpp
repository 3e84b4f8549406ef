#pragma once
// The profiled window's summaries (schema 11, issue 35 item 3): what `sessions show --profile` and
// `check`'s kernel families read of a rank's activities, so a 5 M-kernel window is read as a few
// hundred rows instead of 5 M:
//
//   activity_device_stats (session_id, rank, device)        records, window, busy time (union of
//                                                           every interval), NCCL kernels, their
//                                                           union and its part under other kernels
//   activity_name_stats   (session_id, rank, kind, name_id) calls and summed time, all and in a step
//   activity_step_stats   (session_id, rank, step)          records per step
//
// The store writer fills them with each activity batch, in the transaction of its rows; the
// unions are kept exact by recomputing them inside the batch's time span from the rows already
// there (docs/sessions.md, "Pre-aggregates"). The migration to schema 11 fills them from the rows.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class SqliteDb;
class Store;

/// One device of one rank over the profiled window.
struct DeviceActivityStats {
  int device = 0;
  std::int64_t activities = 0;       ///< records of any kind, empty ones included
  std::int64_t window_start_ns = 0;  ///< earliest start of a non-empty record (0 when none)
  std::int64_t window_end_ns = 0;    ///< latest end of a non-empty record (0 when none)
  std::int64_t busy_ns = 0;          ///< length of the union of every record
  std::int64_t comm_kernels = 0;     ///< NCCL kernels (is_nccl_kernel_name)
  std::int64_t comm_ns = 0;          ///< length of the union of the NCCL kernels
  std::int64_t hidden_ns = 0;        ///< of which other kernels ran at the same time
};

/// One name of one kind on one rank.
struct NameActivityStats {
  ActivityKind kind = ActivityKind::kKernel;
  std::string name;
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;       ///< summed end - start
  std::int64_t stepped_calls = 0;  ///< of the calls, those with a step (step >= 0)
  std::int64_t stepped_ns = 0;     ///< and their summed time
};

/// What the analyses read of one rank's activities.
struct RankActivityStats {
  int rank = 0;
  std::vector<DeviceActivityStats> devices;  ///< by device
  std::vector<NameActivityStats> names;      ///< by kind, then name
  std::vector<std::int64_t> steps;           ///< the steps (>= 0) the records carry, ascending
};

/// True for NCCL kernels ("nccl...", "ncclDevKernel_...", also after a leading "void ").
bool is_nccl_kernel_name(const std::string& name);

/// The stats of `records` (one rank's), as the writer and the migration store them.
RankActivityStats summarize_activities(int rank, const std::vector<ActivityRecord>& records);

/// The stats of one rank: from the tables (schema 11), else (a read-only older file) from its rows.
RankActivityStats load_activity_stats(Store& store, std::int64_t session_id, int rank);

/// The schema-11 tables, empty (the migration's DDL).
std::string activity_stats_schema_sql();
/// Fills the schema-11 tables from the activities of every session (the migration to schema 11).
void fill_activity_stats_from_rows(SqliteDb& db);

/// The store writer's side: call add_batch() before the batch's rows are inserted (it reads the
/// rows already there inside the batch's span), flush() before the commit, clear() on a rollback.
class ActivityStatsAccumulator {
 public:
  explicit ActivityStatsAccumulator(SqliteDb& db);
  ~ActivityStatsAccumulator();
  /// `name_ids` holds the interned id of each record's name, in the records' order.
  void add_batch(std::int64_t session, const ActivityBatch& batch, const std::vector<std::int64_t>& name_ids);
  void flush();
  void clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::sessions
