#include "sessions/rank_bands.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

using ValueSink = std::function<void(std::int64_t step, int rank, double value)>;

constexpr const char* kTimerPrefix = "timer:";
constexpr const char* kCommPrefix = "comm:";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Collects one step's values at a time from a scan in step order and hands each step's band on.
class BandCollector {
 public:
  explicit BandCollector(std::vector<RankBand>& out) : out_(out) {}
  void add(std::int64_t step, int rank, double value) {
    if (!values_.empty() && step != step_) flush();
    step_ = step;
    if (std::isfinite(value)) values_.push_back({rank, value});
  }
  void flush() {
    if (!values_.empty()) out_.push_back(rank_band(step_, values_));
    values_.clear();
  }

 private:
  std::vector<RankBand>& out_;
  std::vector<RankValue> values_;
  std::int64_t step_ = 0;
};

// The rows of one series in step order (then rank), through `sink`. Steps and timers are read in
// their primary key's order; a collective op's rows are summed per rank and step (one step issues
// several of an op: buckets), in milliseconds.
void scan_series(Store& store, std::int64_t session_id, const std::string& key, const ValueSink& sink) {
  std::string sql;
  std::string name;
  if (starts_with(key, kTimerPrefix)) {
    name = key.substr(std::string(kTimerPrefix).size());
    sql = "SELECT step, rank, ms FROM timers WHERE session_id = ?1 AND name_id = (SELECT id FROM names WHERE text = ?2)"
          " ORDER BY step, rank";
  } else if (starts_with(key, kCommPrefix)) {
    name = key.substr(std::string(kCommPrefix).size());
    sql = "SELECT step, rank, SUM(latency_us) / 1000.0 FROM comms WHERE session_id = ?1 AND op = ?2"
          " GROUP BY step, rank ORDER BY step, rank";
  } else {
    const char* column = metric_name(metric_from_name(key));  // throws naming the valid metrics
    sql = std::string("SELECT step, rank, ") + column + " FROM steps WHERE session_id = ?1 AND " + column +
          " IS NOT NULL ORDER BY step, rank";
  }
  Statement s(store.db(), sql.c_str());
  s.bind(1, session_id);
  if (!name.empty()) s.bind(2, name);
  while (s.step())
    if (!s.is_null(2)) sink(s.int64(0), static_cast<int>(s.int64(1)), s.real(2));
}

bool steps_column_has_values(Store& store, std::int64_t session_id, const char* column) {
  Statement s(store.db(), (std::string("SELECT 1 FROM steps WHERE session_id = ?1 AND ") + column +
                           " IS NOT NULL LIMIT 1").c_str());
  s.bind(1, session_id);
  return s.step();
}

// The ops one rank issued (every rank of a data-parallel run issues the same), read through the
// comms index of that rank rather than a scan of every rank's rows.
std::vector<std::string> comm_ops(Store& store, std::int64_t session_id) {
  Statement s(store.db(), "SELECT DISTINCT op FROM comms WHERE session_id = ?1 AND rank = "
                          "(SELECT MIN(rank) FROM comms WHERE session_id = ?1) ORDER BY op");
  s.bind(1, session_id);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::pair<std::int64_t, std::int64_t> step_extent(Store& store, std::int64_t session_id) {
  // Two queries: SQLite answers a lone MIN or MAX from the key's first rows, not a scan.
  Statement low(store.db(), "SELECT MIN(step) FROM steps WHERE session_id = ?1");
  Statement high(store.db(), "SELECT MAX(step) FROM steps WHERE session_id = ?1");
  low.bind(1, session_id);
  high.bind(1, session_id);
  if (!low.step() || low.is_null(0) || !high.step()) return {0, -1};
  return {low.int64(0), high.int64(0)};
}

RankStepSeries series_of(const std::vector<RankStepSeries>& all, const std::string& key) {
  std::string names;
  for (const auto& s : all) {
    if (s.key == key) return s;
    names += (names.empty() ? "" : ", ") + s.key;
  }
  throw SessionsError(ErrorKind::kInvalidArgument,
                      "'" + key + "' is not a per-rank series of this session; it has " + (names.empty() ? "none" : names));
}

// Cells hold sums and counts until every row is read, then the mean.
void fill_grid(Store& store, std::int64_t session_id, RankStepGrid& grid) {
  std::vector<int> row_of;
  for (std::size_t r = 0; r < grid.ranks.size(); ++r) {
    const int rank = grid.ranks[r];
    if (rank >= static_cast<int>(row_of.size())) row_of.resize(static_cast<std::size_t>(rank) + 1, -1);
    row_of[static_cast<std::size_t>(rank)] = static_cast<int>(r);
  }
  const std::size_t cells = grid.ranks.size() * static_cast<std::size_t>(grid.columns);
  std::vector<double> sums(cells, 0.0);
  std::vector<int> counts(cells, 0);
  scan_series(store, session_id, grid.series.key, [&](std::int64_t step, int rank, double value) {
    if (rank < 0 || rank >= static_cast<int>(row_of.size()) || row_of[static_cast<std::size_t>(rank)] < 0) return;
    if (!std::isfinite(value)) return;
    const auto column = std::clamp<std::int64_t>((step - grid.first_step) / grid.steps_per_column, 0, grid.columns - 1);
    const std::size_t cell = static_cast<std::size_t>(row_of[static_cast<std::size_t>(rank)]) * grid.columns + column;
    sums[cell] += value;
    ++counts[cell];
  });
  grid.values.assign(cells, std::numeric_limits<double>::quiet_NaN());
  bool any = false;
  for (std::size_t i = 0; i < cells; ++i) {
    if (counts[i] == 0) continue;
    const double v = grid.values[i] = sums[i] / counts[i];
    grid.min = any ? std::min(grid.min, v) : v;
    grid.max = any ? std::max(grid.max, v) : v;
    any = true;
  }
}

}  // namespace

std::vector<int> load_rank_ids(Store& store, std::int64_t session_id) {
  Statement s(store.db(), "SELECT rank FROM ranks WHERE session_id = ?1 ORDER BY rank");
  s.bind(1, session_id);
  std::vector<int> out;
  while (s.step()) out.push_back(static_cast<int>(s.int64(0)));
  return out.empty() ? load_step_ranks(store, session_id) : out;
}

RankBand rank_band(std::int64_t step, std::vector<RankValue>& values) {
  RankBand band;
  band.step = step;
  band.ranks = static_cast<int>(values.size());
  const auto by_value = [](const RankValue& a, const RankValue& b) {
    return a.value != b.value ? a.value < b.value : a.rank < b.rank;
  };
  const auto [low, high] = std::minmax_element(values.begin(), values.end(), by_value);
  band.min = low->value, band.min_rank = low->rank;
  // Equal values order by rank, and minmax_element's max is the last of them: name the lowest rank.
  band.max = high->value;
  band.max_rank = high->rank;
  for (const auto& v : values)
    if (v.value == band.max) band.max_rank = std::min(band.max_rank, v.rank);
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end(), by_value);
  band.median = middle->value;
  if (values.size() % 2 == 0)  // the largest of the lower half is the other middle value
    band.median = (band.median + std::max_element(values.begin(), middle, by_value)->value) / 2;
  return band;
}

std::vector<std::vector<RankBand>> load_step_bands(Store& store, std::int64_t session_id,
                                                   const std::vector<Metric>& metrics) {
  std::vector<std::vector<RankBand>> out(metrics.size());
  if (metrics.empty()) return out;
  std::string sql = "SELECT step, rank";
  for (auto m : metrics) sql += std::string(", ") + metric_name(m);
  sql += " FROM steps WHERE session_id = ?1 ORDER BY step, rank";
  std::vector<BandCollector> collectors;
  for (auto& bands : out) collectors.emplace_back(bands);
  Statement s(store.db(), sql.c_str());
  s.bind(1, session_id);
  while (s.step()) {
    const std::int64_t step = s.int64(0);
    const int rank = static_cast<int>(s.int64(1));
    for (std::size_t m = 0; m < metrics.size(); ++m)
      if (!s.is_null(static_cast<int>(m) + 2)) collectors[m].add(step, rank, s.real(static_cast<int>(m) + 2));
  }
  for (auto& c : collectors) c.flush();
  return out;
}

std::vector<RankStepSeries> list_rank_step_series(Store& store, std::int64_t session_id) {
  std::vector<RankStepSeries> out;
  const RankStepSeries columns[] = {{"step_time_ms", "step time", "ms"},   {"loss", "loss", ""},
                                     {"grad_norm", "grad norm", ""},        {"tokens_per_s", "throughput", "tokens/s"},
                                     {"tflops", "TFLOP/s", "TFLOP/s"},      {"mem_allocated", "memory allocated", "bytes"},
                                     {"mem_peak", "memory peak", "bytes"}};
  for (const auto& column : columns)
    if (steps_column_has_values(store, session_id, column.key.c_str())) out.push_back(column);
  for (const auto& timer : load_timer_names(store, session_id))
    out.push_back({kTimerPrefix + timer, timer + " (timer)", "ms"});
  for (const auto& op : comm_ops(store, session_id)) out.push_back({kCommPrefix + op, op + " wait", "ms"});
  return out;
}

std::vector<RankBand> load_series_bands(Store& store, std::int64_t session_id, const std::string& key) {
  std::vector<RankBand> out;
  BandCollector collector(out);
  scan_series(store, session_id, key, [&](std::int64_t step, int rank, double v) { collector.add(step, rank, v); });
  collector.flush();
  return out;
}

RankStepGrid load_rank_step_grid(Store& store, std::int64_t session_id, const std::string& key,
                                 const std::vector<int>& ranks, int max_columns) {
  if (max_columns < 1)
    throw SessionsError(ErrorKind::kInvalidArgument, "load_rank_step_grid: max_columns must be at least 1");
  RankStepGrid grid;
  grid.series = series_of(list_rank_step_series(store, session_id), key);
  grid.ranks = ranks.empty() ? load_rank_ids(store, session_id) : ranks;
  const auto [first, last] = step_extent(store, session_id);
  if (last < first || grid.ranks.empty()) return grid;
  const std::int64_t steps = last - first + 1;
  grid.first_step = first;
  grid.steps_per_column = (steps + max_columns - 1) / max_columns;
  grid.columns = static_cast<int>((steps + grid.steps_per_column - 1) / grid.steps_per_column);
  fill_grid(store, session_id, grid);
  return grid;
}

}  // namespace shardscope::sessions
