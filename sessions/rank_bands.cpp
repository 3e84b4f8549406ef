#include "sessions/rank_bands.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <exception>
#include <map>
#include <thread>
#include <utility>

#include <sqlite3.h>

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_bands.hpp"
#include "sessions/store_stats.hpp"

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

// Bands from step_stats (schema 10), exact: where every rank's value at a step is the same (min ==
// max and every rank with a row has one; the loss, lr, loss scale and grad norm of a data-parallel
// run are one value on every rank) the band is that value with the step's lowest rank at both ends,
// which is what rank_band makes of the rows; only the other steps of a metric (a step time differs
// by rank at every step) are read from the rows, one step at a time through the primary key and
// only their columns, split over a few connections when they are millions of rows. A 1,024-rank
// session of 10,000 steps reads 10,000 stats rows and the step time's rows instead of every column
// of 10 M rows (docs/benchmarks.md, "The window at 1,024 ranks"). From schema 12 the step time's
// band is stored too (step_bands, store_bands.hpp): a step whose stored band was made of as many
// rows as step_stats counts is read from it, so only steps the writer has not banded (none in a
// file it keeps) go to the rows.

// What step_stats says of one step: which metrics' bands need the rows, which are flat, which are
// stored (schema 12's step_bands, made of as many rows as the step has).
struct StatsStep {
  std::int64_t step = 0;
  int ranks = 0;         // ranks with a row at the step
  std::uint32_t rows = 0;  // bit m: metric m's values differ (or one is infinite, or a rank has none)
  std::uint32_t flat = 0;  // bit m: every rank's value of metric m is the same finite value
  std::uint32_t stored = 0;  // bit m: step_bands holds metric m's band of these rows
};

struct StatsSteps {
  std::vector<StatsStep> steps;
  std::vector<double> flat_values;  // the flat metrics' values, step by step, in metric order
  std::vector<RankBand> stored_bands;  // the stored bands, step by step, in metric order (ranks 0: none)
  std::size_t row_count = 0;        // rows of the steps with a `rows` bit
};

// Each metric's stored bands (none on a file before schema 12), and where the next step's is.
struct StoredCursors {
  std::vector<std::vector<StoredBand>> by_metric;
  std::vector<std::size_t> next;

  StoredCursors(Store& store, std::int64_t session_id, const std::vector<Metric>& metrics)
      : by_metric(metrics.size()), next(metrics.size(), 0) {
    if (!has_step_bands(store)) return;
    for (std::size_t m = 0; m < metrics.size(); ++m)
      if (has_stored_bands(metrics[m])) by_metric[m] = load_stored_bands(store.db(), session_id, metrics[m]);
  }
  // Metric m's stored band of `step` if it was made of the step's `ranks` rows, else null.
  const StoredBand* band(std::size_t m, std::int64_t step, int ranks) {
    const auto& bands = by_metric[m];
    std::size_t& i = next[m];
    while (i < bands.size() && bands[i].band.step < step) ++i;
    if (i == bands.size() || bands[i].band.step != step || bands[i].rows != ranks) return nullptr;
    return &bands[i];
  }
};

StatsSteps read_stats_steps(SqliteDb& db, std::int64_t session_id, const std::vector<Metric>& metrics,
                            StoredCursors& stored) {
  std::string sql = "SELECT step, ranks";
  for (auto m : metrics) {
    const std::string c = metric_name(m);
    sql += ", " + c + "_n, " + c + "_min, " + c + "_max";
  }
  sql += " FROM step_stats WHERE session_id = ?1 ORDER BY step";
  Statement s(db, sql.c_str());
  s.bind(1, session_id);
  StatsSteps out;
  while (s.step()) {
    StatsStep step{s.int64(0), static_cast<int>(s.int64(1)), 0, 0, 0};
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      const int c = 2 + 3 * static_cast<int>(m);
      const std::int64_t n = s.int64(c);
      if (n == 0) continue;  // no rank has a value: no band
      if (const StoredBand* b = stored.band(m, step.step, step.ranks)) {
        step.stored |= 1u << m;
        out.stored_bands.push_back(b->band);
        continue;
      }
      const bool flat = n == step.ranks && !s.is_null(c + 1) && !s.is_null(c + 2) && s.real(c + 1) == s.real(c + 2) &&
                        std::isfinite(s.real(c + 1));
      (flat ? step.flat : step.rows) |= 1u << m;
      if (flat) out.flat_values.push_back(s.real(c + 1));
    }
    if (step.rows) out.row_count += static_cast<std::size_t>(step.ranks);
    out.steps.push_back(step);
  }
  return out;
}

// The bands of the `rows` metrics of some steps, read from their rows, and each step's lowest rank.
struct RowBands {
  std::vector<std::vector<RankBand>> by_metric;
  std::vector<std::pair<std::int64_t, int>> lowest_rank;  // (step, lowest rank with a row) of each step read
};

// Reads one step's rows at a time. One statement per set of metrics (SQLite decodes every column
// a statement names, so the flat metrics' columns are left out).
RowBands read_row_bands(SqliteDb& db, std::int64_t session_id, const std::vector<Metric>& metrics,
                        const StatsStep* begin, const StatsStep* end) {
  RowBands out;
  out.by_metric.resize(metrics.size());
  std::map<std::uint32_t, Statement> statements;
  std::vector<std::vector<RankValue>> values(metrics.size());
  for (const StatsStep* step = begin; step != end; ++step) {
    if (!step->rows) continue;
    auto it = statements.find(step->rows);
    if (it == statements.end()) {
      std::string sql = "SELECT rank";
      for (std::size_t m = 0; m < metrics.size(); ++m)
        if (step->rows & (1u << m)) sql += std::string(", ") + metric_name(metrics[m]);
      sql += " FROM steps WHERE session_id = ?1 AND step = ?2 ORDER BY rank";
      it = statements.emplace(step->rows, Statement(db, sql.c_str())).first;
    }
    Statement& s = it->second;
    s.reset();  // clears the bindings too
    s.bind(1, session_id).bind(2, step->step);
    std::vector<std::size_t> read;  // the metric of each column after the rank
    for (std::size_t m = 0; m < metrics.size(); ++m)
      if (step->rows & (1u << m)) read.push_back(m);
    int lowest = -1;
    while (s.step()) {
      const int rank = static_cast<int>(s.int64(0));
      if (lowest < 0) lowest = rank;  // rows come in rank order
      for (std::size_t i = 0; i < read.size(); ++i) {
        const int column = static_cast<int>(i) + 1;
        if (s.is_null(column)) continue;
        const double value = s.real(column);
        if (std::isfinite(value)) values[read[i]].push_back({rank, value});  // as the row path: finite values only
      }
    }
    for (const std::size_t m : read) {
      if (!values[m].empty()) out.by_metric[m].push_back(rank_band(step->step, values[m]));
      values[m].clear();
    }
    out.lowest_rank.emplace_back(step->step, lowest);
  }
  return out;
}

// A deferred read transaction where none is open, so step_stats and the rows read after it are one
// snapshot of a file a collector is still writing.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(SqliteDb& db) : db_(db), began_(sqlite3_get_autocommit(db.handle()) != 0) {
    if (began_) db_.exec("BEGIN");
  }
  ~ReadSnapshot() {
    if (began_) sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr);  // a read: nothing to lose
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;
  bool began() const { return began_; }

 private:
  SqliteDb& db_;
  bool began_;
};

// Up to this many connections read a step's rows at once (StepBandOptions::rows_per_reader
// each): SQLite decoding the rows is the whole cost, about 0.3 us a row on one core.
constexpr unsigned kMaxBandReaders = 4;

// The steps' row bands, in step order, on `readers` connections: the caller's for the first part,
// a read-only one of its own for each other (its own snapshot: a step written meanwhile may show
// more ranks than step_stats said; what it shows is still that step's rows).
std::vector<RowBands> read_row_bands_in_parts(Store& store, std::int64_t session_id, const std::vector<Metric>& metrics,
                                              const StatsSteps& stats, unsigned readers) {
  std::vector<const StatsStep*> bounds{stats.steps.data()};
  const std::size_t per_part = (stats.row_count + readers - 1) / readers;
  std::size_t rows = 0;
  for (const StatsStep& step : stats.steps) {
    if (step.rows) rows += static_cast<std::size_t>(step.ranks);
    if (rows >= per_part && bounds.size() < readers) bounds.push_back(&step + 1), rows = 0;
  }
  bounds.push_back(stats.steps.data() + stats.steps.size());
  const std::size_t parts = bounds.size() - 1;
  std::vector<RowBands> out(parts);
  std::vector<std::exception_ptr> errors(parts);
  std::vector<std::thread> threads;
  for (std::size_t p = 1; p < parts; ++p)
    threads.emplace_back([&, p] {
      try {
        SqliteDb db(store.path(), false, true);
        db.exec("PRAGMA busy_timeout = 5000");
        ReadSnapshot snapshot(db);
        out[p] = read_row_bands(db, session_id, metrics, bounds[p], bounds[p + 1]);
      } catch (...) {
        errors[p] = std::current_exception();
      }
    });
  try {
    out[0] = read_row_bands(store.db(), session_id, metrics, bounds[0], bounds[1]);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

std::vector<std::vector<RankBand>> load_step_bands_from_stats(Store& store, std::int64_t session_id,
                                                              const std::vector<Metric>& metrics,
                                                              std::size_t rows_per_reader) {
  const std::size_t count = metrics.size();
  std::vector<std::vector<RankBand>> out(count);
  if (metrics.empty()) return out;
  SqliteDb& db = store.db();
  ReadSnapshot snapshot(db);
  StoredCursors stored(store, session_id, metrics);
  const StatsSteps stats = read_stats_steps(db, session_id, metrics, stored);
  // Other connections see only what is committed: read on the caller's alone inside its transaction.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned readers = !snapshot.began() ? 1u
      : static_cast<unsigned>(std::clamp<std::size_t>(stats.row_count / rows_per_reader, 1, std::min(cores, kMaxBandReaders)));
  const std::vector<RowBands> parts = read_row_bands_in_parts(store, session_id, metrics, stats, readers);
  // Merge in step order: each step's flat bands (named by its lowest rank) and its row bands.
  Statement first(db, "SELECT rank FROM steps WHERE session_id = ?1 AND step = ?2 ORDER BY rank LIMIT 1");
  std::vector<std::size_t> next(count, 0);
  std::size_t part = 0, next_lowest = 0, next_flat = 0, next_stored = 0;
  for (const StatsStep& step : stats.steps) {
    int lowest = -1;
    if (step.rows) {
      while (part < parts.size() && next_lowest == parts[part].lowest_rank.size()) {
        ++part;
        next_lowest = 0;
        std::fill(next.begin(), next.end(), 0);
      }
      if (part < parts.size()) lowest = parts[part].lowest_rank[next_lowest++].second;
    } else if (step.flat) {  // (the stored bands need no rank of their own)
      first.reset();
      first.bind(1, session_id).bind(2, step.step);
      if (first.step()) lowest = static_cast<int>(first.int64(0));
    }
    for (std::size_t m = 0; m < count; ++m) {
      if (step.stored & (1u << m)) {
        const RankBand& band = stats.stored_bands[next_stored++];
        if (band.ranks > 0) out[m].push_back(band);  // none: only infinite values, as the rows give
      } else if ((step.rows & (1u << m)) && part < parts.size()) {
        const auto& bands = parts[part].by_metric[m];
        if (next[m] < bands.size() && bands[next[m]].step == step.step) out[m].push_back(bands[next[m]++]);
      } else if (step.flat & (1u << m)) {  // (a bit is in one of stored, rows and flat)
        const double value = stats.flat_values[next_flat++];
        if (lowest < 0) continue;  // stats without rows: nothing to name, as the rows would have drawn nothing
        RankBand band;
        band.step = step.step;
        band.min = band.median = band.max = value;
        band.min_rank = band.max_rank = lowest;
        band.ranks = step.ranks;
        out[m].push_back(band);
      }
    }
  }
  return out;
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
                                                   const std::vector<Metric>& metrics, const StepBandOptions& options) {
  if (options.source == BandSource::kPreferStats && has_stats(store) && metrics.size() <= kMaxStatsBandMetrics)
    return load_step_bands_from_stats(store, session_id, metrics, std::max<std::size_t>(options.rows_per_reader, 1));
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
