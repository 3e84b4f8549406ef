#include "sessions/store_bands.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

// The steps columns a band can be drawn of (every Metric's), in the steps table's order. Frozen
// with schema 12: the table's `metric` holds these names.
constexpr const char* kBandColumns[] = {"step_time_ms",  "loss",         "lr",      "loss_scale",
                                        "grad_norm",     "samples_per_s", "tokens_per_s", "tflops",
                                        "mem_allocated", "mem_reserved", "mem_peak"};
constexpr std::size_t kBandColumnCount = std::size(kBandColumns);

constexpr const char* kStepBandsSql = R"sql(
CREATE TABLE step_bands(
  session_id INTEGER NOT NULL,
  metric TEXT NOT NULL,
  step INTEGER NOT NULL,
  rows INTEGER NOT NULL,
  ranks INTEGER NOT NULL,
  min REAL,
  median REAL,
  max REAL,
  min_rank INTEGER,
  max_rank INTEGER,
  PRIMARY KEY(session_id, metric, step)
) WITHOUT ROWID;
)sql";

// The writer holds the running bands of the latest steps it wrote, up to about this many bytes
// (8 bytes a value of a column whose values differ at the step, none for a flat one: at 1,024
// ranks some 300 steps when only the step time differs); a step it let go of is read from the
// file again if more of its rows come.
constexpr std::size_t kMaxHeldBytes = std::size_t{8} << 20;

using StepKey = std::pair<std::int64_t, std::int64_t>;  // (session, step)
using RowValues = std::array<double, kBandColumnCount>;  // NaN: the row has no value (NULL)

// One column's band at one step, kept as its rows come, so a commit rewrites a step's bands
// without going over its values again: the min and max with the lowest rank holding each, and the
// finite values in two heaps (the lower half, a max-heap, and the upper half, a min-heap holding
// the middle one of an odd count), so the median is at their tops as rank_band() takes it of the
// sorted values. While every finite value is the same (loss, lr, memory of a data-parallel run)
// the heaps stay empty.
class RunningBand {
 public:
  void add(int rank, double value) {
    if (std::isnan(value)) return;  // a NULL cell: no value
    ++present_;
    if (!std::isfinite(value)) return;  // counted as a value, left out of the band, as the rows
    if (finite_ == 0 || value < min_ || (value == min_ && rank < min_rank_)) min_ = value, min_rank_ = rank;
    if (finite_ == 0 || value > max_ || (value == max_ && rank < max_rank_)) max_ = value, max_rank_ = rank;
    ++finite_;
    if (lower_.empty() && upper_.empty()) {
      if (min_ == max_) return;  // still flat
      spread(value);
    }
    push(value);
  }
  bool has_value() const { return present_ > 0; }
  std::int64_t finite() const { return finite_; }
  RankBand band(std::int64_t step) const {
    RankBand b;
    b.step = step;
    b.ranks = static_cast<int>(finite_);
    b.min = min_, b.max = max_, b.min_rank = min_rank_, b.max_rank = max_rank_;
    if (upper_.empty()) b.median = min_;
    else if (finite_ % 2 == 1) b.median = upper_.front();
    else b.median = (upper_.front() + lower_.front()) / 2;  // rank_band's order: the upper middle first
    return b;
  }
  std::size_t bytes() const { return (lower_.capacity() + upper_.capacity()) * sizeof(double); }

 private:
  // The flat values seen before `value` (every one the other end of the band from it) into the heaps.
  void spread(double value) {
    const double flat = value == min_ ? max_ : min_;
    for (std::int64_t i = 0; i + 1 < finite_; ++i) push(flat);
  }
  void push(double value) {
    if (upper_.empty() || value >= upper_.front()) {
      upper_.push_back(value);
      std::push_heap(upper_.begin(), upper_.end(), std::greater<>());
    } else {
      lower_.push_back(value);
      std::push_heap(lower_.begin(), lower_.end());
    }
    if (upper_.size() > lower_.size() + 1) move_top(upper_, lower_, std::greater<>(), std::less<>());
    else if (lower_.size() > upper_.size()) move_top(lower_, upper_, std::less<>(), std::greater<>());
  }
  template <class From, class To>
  static void move_top(std::vector<double>& from, std::vector<double>& to, From from_order, To to_order) {
    std::pop_heap(from.begin(), from.end(), from_order);
    to.push_back(from.back());
    from.pop_back();
    std::push_heap(to.begin(), to.end(), to_order);
  }

  std::int64_t present_ = 0, finite_ = 0;
  double min_ = 0, max_ = 0;
  int min_rank_ = 0, max_rank_ = 0;
  std::vector<double> lower_, upper_;
};

// A step's running bands, one per column, and how many rows (ranks) made them.
struct StepBands {
  std::array<RunningBand, kBandColumnCount> columns;
  std::int64_t rows = 0;
  std::uint64_t used = 0;  // the flush that last touched it
  void add(int rank, const RowValues& values) {
    ++rows;
    for (std::size_t c = 0; c < kBandColumnCount; ++c) columns[c].add(rank, values[c]);
  }
  std::size_t bytes() const {
    std::size_t n = sizeof(StepBands);
    for (const auto& c : columns) n += c.bytes();
    return n;
  }
};

double value_or_nan(const std::optional<double>& v) {
  return v ? *v : std::numeric_limits<double>::quiet_NaN();  // a NaN value is stored as NULL too
}
double value_or_nan(const std::optional<std::int64_t>& v) {
  return v ? static_cast<double>(*v) : std::numeric_limits<double>::quiet_NaN();
}

RowValues values_of(const StepMetrics& m) {
  return {value_or_nan(m.step_time_ms),        value_or_nan(m.loss),           value_or_nan(m.lr),
          value_or_nan(m.loss_scale),          value_or_nan(m.grad_norm),      value_or_nan(m.samples_per_s),
          value_or_nan(m.tokens_per_s),        value_or_nan(m.tflops),         value_or_nan(m.mem_allocated_bytes),
          value_or_nan(m.mem_reserved_bytes),  value_or_nan(m.mem_peak_bytes)};
}

// Columns `first`.. of `s`, as the row path reads them (s.real of a non-NULL cell).
RowValues values_of(const Statement& s, int first) {
  RowValues out;
  for (std::size_t c = 0; c < kBandColumnCount; ++c) {
    const int column = first + static_cast<int>(c);
    out[c] = s.is_null(column) ? std::numeric_limits<double>::quiet_NaN() : s.real(column);
  }
  return out;
}

std::string band_columns_sql() {
  std::string sql;
  for (const char* c : kBandColumns) sql += std::string(", ") + c;
  return sql;
}

// The two statements that write a step's bands: an upsert, and the delete of a band whose column
// no longer has a value at the step (a re-sent row without it).
struct BandStatements {
  explicit BandStatements(SqliteDb& db)
      : upsert(db, "INSERT OR REPLACE INTO step_bands VALUES(?,?,?,?,?,?,?,?,?,?)"),
        erase(db, "DELETE FROM step_bands WHERE session_id = ? AND metric = ? AND step = ?") {}
  Statement upsert, erase;
};

// Each column's band of a step. `erase_empty`: delete the band of a column without a value (one
// the file may hold: a step read from the file, whose re-sent row may have dropped the value).
void write_bands(BandStatements& out, std::int64_t session, std::int64_t step, const StepBands& s, bool erase_empty) {
  for (std::size_t c = 0; c < kBandColumnCount; ++c) {
    const std::string metric = kBandColumns[c];
    const RunningBand& column = s.columns[c];
    if (!column.has_value()) {
      if (erase_empty) out.erase.bind(1, session).bind(2, metric).bind(3, step).run();
      continue;
    }
    Statement& u = out.upsert;
    u.bind(1, session).bind(2, metric).bind(3, step).bind(4, s.rows).bind(5, column.finite());
    if (column.finite() == 0) {  // only infinite values: the rows draw no band either
      for (int i = 6; i <= 10; ++i) u.bind_null(i);
    } else {
      const RankBand b = column.band(step);
      u.bind(6, b.min).bind(7, b.median).bind(8, b.max).bind(9, b.min_rank).bind(10, b.max_rank);
    }
    u.run();
  }
}

}  // namespace

std::string step_bands_schema_sql() { return kStepBandsSql; }

bool has_step_bands(Store& store) { return store.schema_version() >= 12; }

bool has_stored_bands(Metric metric) {
  const std::string name = metric_name(metric);
  for (const char* c : kBandColumns)
    if (name == c) return true;
  return false;
}

void fill_step_bands_from_rows(SqliteDb& db) {
  BandStatements out(db);
  Statement rows(db, ("SELECT session_id, step, rank" + band_columns_sql() +
                      " FROM steps ORDER BY session_id, step, rank").c_str());  // the primary key's order
  std::optional<StepKey> current;
  StepBands step;
  while (rows.step()) {
    const StepKey key{rows.int64(0), rows.int64(1)};
    if (current && key != *current) {
      write_bands(out, current->first, current->second, step, false);
      step = StepBands{};
    }
    current = key;
    step.add(static_cast<int>(rows.int64(2)), values_of(rows, 3));
  }
  if (current) write_bands(out, current->first, current->second, step, false);
}

std::vector<StoredBand> load_stored_bands(SqliteDb& db, std::int64_t session_id, Metric metric) {
  Statement s(db, "SELECT step, rows, ranks, min, median, max, min_rank, max_rank FROM step_bands "
                  "WHERE session_id = ?1 AND metric = ?2 ORDER BY step");
  s.bind(1, session_id).bind(2, std::string(metric_name(metric)));
  std::vector<StoredBand> out;
  while (s.step()) {
    StoredBand b;
    b.band.step = s.int64(0);
    b.rows = s.int64(1);
    b.band.ranks = static_cast<int>(s.int64(2));
    if (b.band.ranks > 0) {
      b.band.min = s.real(3), b.band.median = s.real(4), b.band.max = s.real(5);
      b.band.min_rank = static_cast<int>(s.int64(6)), b.band.max_rank = static_cast<int>(s.int64(7));
    }
    out.push_back(b);
  }
  return out;
}

// A batch's rows of one step, and whether one replaced a row the file had.
struct BatchStep {
  std::vector<std::pair<int, RowValues>> rows;
  bool replaced = false;
};

struct StepBandsAccumulator::Impl {
  explicit Impl(SqliteDb& d)
      : out(d), load(d, ("SELECT rank" + band_columns_sql() + " FROM steps WHERE session_id = ?1 AND step = ?2").c_str()) {}

  StepBands& held_step(const StepKey& key, const BatchStep& batch_step, bool& loaded);
  void let_go_of_oldest();

  BandStatements out;
  Statement load;
  std::map<StepKey, BatchStep> batch;
  std::map<StepKey, StepBands> held;
  std::size_t held_bytes = 0;
  std::uint64_t flushes = 0;
};

// The step's bands with the batch's rows: those held plus the batch's, or (a step new to this
// writer, let go of, or with a re-sent row, whose old value a running band cannot take back)
// every row of the step in the file, which has the batch's rows by now.
StepBands& StepBandsAccumulator::Impl::held_step(const StepKey& key, const BatchStep& batch_step, bool& loaded) {
  auto it = held.find(key);
  loaded = it == held.end() || batch_step.replaced;
  if (it != held.end()) held_bytes -= it->second.bytes();
  if (!loaded) {
    for (const auto& [rank, values] : batch_step.rows) it->second.add(rank, values);
  } else {
    it = held.insert_or_assign(key, StepBands{}).first;
    load.reset();
    load.bind(1, key.first).bind(2, key.second);
    while (load.step()) it->second.add(static_cast<int>(load.int64(0)), values_of(load, 1));
  }
  held_bytes += it->second.bytes();
  it->second.used = flushes;
  return it->second;
}

void StepBandsAccumulator::Impl::let_go_of_oldest() {
  while (held_bytes > kMaxHeldBytes && held.size() > 1) {
    auto oldest = held.begin();
    for (auto it = held.begin(); it != held.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    held_bytes -= oldest->second.bytes();
    held.erase(oldest);
  }
}

StepBandsAccumulator::StepBandsAccumulator(SqliteDb& db) : impl_(std::make_unique<Impl>(db)) {}
StepBandsAccumulator::~StepBandsAccumulator() = default;

void StepBandsAccumulator::add_step(std::int64_t session, const StepMetrics& m, bool replaced) {
  BatchStep& step = impl_->batch[{session, m.step}];
  step.rows.emplace_back(m.rank, values_of(m));
  step.replaced = step.replaced || replaced;
}

void StepBandsAccumulator::flush() {
  ++impl_->flushes;
  for (const auto& [key, rows] : impl_->batch) {
    bool loaded = false;
    const StepBands& step = impl_->held_step(key, rows, loaded);
    write_bands(impl_->out, key.first, key.second, step, loaded);
  }
  impl_->batch.clear();
  impl_->let_go_of_oldest();
}

void StepBandsAccumulator::clear() {
  impl_->batch.clear();
  impl_->held.clear();  // it held rows that rolled back
  impl_->held_bytes = 0;
}

}  // namespace shardscope::sessions
