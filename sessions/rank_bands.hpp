#pragma once
// Many-rank sessions read as aggregates, never as one series per rank: per step the spread across
// ranks (min, median, max and which ranks hold the ends) for the bands the pages draw above a
// handful of ranks, and a rank x step grid of one per-rank series (step time, a phase timer, the
// time in one collective op) for the heat map, where a straggler is a row brighter than the rest.
// Each read is one pass over the session's rows in key order (steps and timers are keyed
// (session, step, rank)), but for the steps columns' bands, which read the bands stored per step
// (schema 12), else step_stats and only the rows of the steps whose ranks differ; what comes back is
// one row per step, or one cell per rank and column of steps, whatever the session's size.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sessions/session_reader.hpp"

namespace shardscope::sessions {

class Store;

struct RankValue {
  int rank = 0;
  double value = 0;
};

/// One step's spread across the ranks that reported it.
struct RankBand {
  std::int64_t step = 0;
  double min = 0, median = 0, max = 0;
  int min_rank = 0, max_rank = 0;  ///< the lowest rank holding the min, the max
  int ranks = 0;                   ///< how many ranks reported the step
};

/// The band of `values` (non-empty; reordered); the median of an even count is the mean of the two middle values.
RankBand rank_band(std::int64_t step, std::vector<RankValue>& values);

/// The session's ranks, sorted (the ranks table; the ranks with steps for a session without one).
std::vector<int> load_rank_ids(Store& store, std::int64_t session_id);

/// Where load_step_bands reads: the stored bands and step_stats where they give the band exactly
/// (schemas 12 and 10; the rows of the other steps), or every row (the reference the tests hold
/// the first to).
enum class BandSource { kPreferStats, kRows };
/// load_step_bands reads step_stats for at most this many metrics at once (a bit mask of them).
constexpr std::size_t kMaxStatsBandMetrics = 32;

struct StepBandOptions {
  BandSource source = BandSource::kPreferStats;
  /// Rows to read from step_stats' path per connection: past twice this, the steps are split over
  /// a read-only connection (and thread) more per this many rows, up to 4 or the machine's cores.
  std::size_t rows_per_reader = 500'000;
};

/// Per metric (in `metrics`' order) every step's band, in step order: from step_bands, step_stats and
/// the rows of the steps neither covers, or (`kRows`, or a file without step_stats) one pass over the steps.
std::vector<std::vector<RankBand>> load_step_bands(Store& store, std::int64_t session_id,
                                                   const std::vector<Metric>& metrics,
                                                   const StepBandOptions& options = {});

/// A per-rank per-step series a session can hold: a steps column, a timer or a collective op.
struct RankStepSeries {
  std::string key;    ///< "step_time_ms" (a metric_name), "timer:forward", "comm:all_reduce"
  std::string title;  ///< "step time", "forward (timer)", "all_reduce wait"
  std::string unit;   ///< "ms", or the metric's own ("" for loss)
};

/// The series of `session_id` that have values: step time first, then the timers, then the ops.
std::vector<RankStepSeries> list_rank_step_series(Store& store, std::int64_t session_id);

/// Every step's band of one series (a RankStepSeries key).
std::vector<RankBand> load_series_bands(Store& store, std::int64_t session_id, const std::string& key);

/// A rank x step grid of one series: rows are `ranks` (every rank with values when empty), columns
/// are runs of `steps_per_column` consecutive steps holding the mean of the rank's values there
/// (NaN where it reported none), so a long run fits `max_columns`.
struct RankStepGrid {
  RankStepSeries series;
  std::vector<int> ranks;             ///< row r is rank ranks[r]
  std::int64_t first_step = 0;        ///< column c holds steps first_step + c * steps_per_column ...
  std::int64_t steps_per_column = 1;
  int columns = 0;
  std::vector<double> values;         ///< row-major: values[r * columns + c]
  double min = 0, max = 0;            ///< over the finite cells
  double at(std::size_t row, int column) const { return values[row * static_cast<std::size_t>(columns) + column]; }
};

/// Reads the grid of `key` for `ranks` (all when empty). Throws SessionsError(kInvalidArgument)
/// naming the valid keys when `key` is not a series of the session.
RankStepGrid load_rank_step_grid(Store& store, std::int64_t session_id, const std::string& key,
                                 const std::vector<int>& ranks = {}, int max_columns = 1000);

}  // namespace shardscope::sessions
