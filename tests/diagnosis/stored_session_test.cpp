// The review of a stored session from its pre-aggregates (a large session's path) finds what the
// review of every row finds: the same findings, word for word.
#include "diagnosis/stored_session.hpp"

#include <limits>

#include <gtest/gtest.h>

#include "sessions/session_reader.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::diagnosis {
namespace {

namespace ss = sessions;

constexpr int kRanks = 8;
constexpr int kSteps = 80;
constexpr int kLastOfRank7 = 75;  // rank 7 stops early: the straggler window ends at its last step
constexpr double kInf = std::numeric_limits<double>::infinity();

// Losses are multiples of 1/64, so a sum over ranks is exact in any order and both reviews'
// means agree to the bit.
std::optional<double> loss_of(int rank, int step) {
  if (step == 30 && rank == 3) return kInf;   // a ±Inf loss: the rows of that step are read
  if (step == 31 && rank == 3) return -kInf;
  if (step == 50 && rank == 6) return std::numeric_limits<double>::quiet_NaN();  // stored as NULL
  if (step == 60) return 40.0;                // a spike on every rank
  return 4.0 - step / 64.0 + (rank % 2) / 16.0 + ((step * 7 + rank) % 5) / 64.0;
}

ss::StepMetrics step_row(int rank, int step) {
  ss::StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1795900000 + step;
  m.step_time_ms = 150;
  m.loss = loss_of(rank, step);
  m.skipped = step >= 40 && step <= 45;  // an fp16 overflow streak, the scale halving each step
  m.loss_scale = step < 40 ? 65536.0 : 65536.0 / (1 << std::min(step - 39, 6));
  return m;
}

ss::TimerBreakdown timer_row(int rank, int step) {
  const double jitter = ((step * 3 + rank) % 4) * 0.5;
  const double forward = (rank == 5 ? 52 : 40) + jitter;  // rank 5 straggles in forward
  const double wait = 2 + (rank == 5 ? 0 : 12);
  return {rank, step, {{"forward", forward}, {"backward_inner", 80 + jitter}, {"backward_allreduce", wait},
                       {"backward", 80 + jitter + wait}, {"step", 10}}};
}

ss::CollectiveMark mark(int rank, const std::string& group, std::int64_t sequence, bool left) {
  ss::CollectiveMark m;
  m.rank = rank;
  m.group = group;
  if (group == "world") m.group_ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  m.sequence = sequence;
  m.op = sequence % 3 ? "all_reduce" : "all_gather";
  m.bytes = 1 << 20;
  m.step = sequence / 4 + 1;
  m.entered_at = 1795900000 + static_cast<double>(sequence);
  if (left) m.left_at = m.entered_at + 0.5;
  return m;
}

// Collectives 1..300 on every rank; ranks 0-6 wait in 301, which rank 7 never entered; a second
// group's marks all completed.
void add_marks(std::vector<ss::Event>& events) {
  for (int rank = 0; rank < kRanks; ++rank) {
    for (std::int64_t sequence = 1; sequence <= 300; ++sequence) events.push_back(mark(rank, "world", sequence, true));
    if (rank != 7) events.push_back(mark(rank, "world", 301, false));
    for (std::int64_t sequence = 1; sequence <= 5; ++sequence) events.push_back(mark(rank, "pipe", sequence, true));
  }
}

std::vector<ss::Event> session_events(const std::string& status) {
  std::vector<ss::Event> events{ss::testing::sample_run_start("review", kRanks, "{}")};
  for (int step = 1; step <= kSteps; ++step)
    for (int rank = 0; rank < kRanks; ++rank) {
      if (rank == 7 && step > kLastOfRank7) continue;
      events.push_back(step_row(rank, step));
      events.push_back(timer_row(rank, step));
    }
  add_marks(events);
  events.push_back(ss::RunEnd{status, 1795900000 + kSteps + 600, kSteps + 600, {}});
  return events;
}

struct Reviews {
  std::vector<ss::Finding> every_row, aggregates;
};

Reviews review_both_ways(const std::string& status) {
  const std::string path = ss::testing::temp_path("stored_review");
  {
    ss::Store store = ss::Store::open_or_create(path);
    ss::StoreWriter(store).write("uid-review", session_events(status));
  }
  ss::Store store = ss::Store::open(path);
  const auto id = ss::find_session(store, "uid-review");
  const auto detail = ss::load_session(store, id);
  Reviews r{review_stored_session(store, id, detail),
            review_stored_session(store, id, detail, StoredReviewOptions{.full_read_rows = 0})};
  ss::testing::remove_store(path);
  return r;
}

void expect_same(const std::vector<ss::Finding>& a, const std::vector<ss::Finding>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].kind);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].severity, b[i].severity);
    EXPECT_EQ(a[i].first_step, b[i].first_step);
    EXPECT_EQ(a[i].last_step, b[i].last_step);
    EXPECT_EQ(a[i].ranks, b[i].ranks);
    EXPECT_EQ(a[i].summary, b[i].summary);
    EXPECT_EQ(a[i].evidence, b[i].evidence);
    EXPECT_EQ(a[i].suggested_fix, b[i].suggested_fix);
  }
}

const ss::Finding* find_kind(const std::vector<ss::Finding>& findings, const std::string& kind) {
  for (const auto& f : findings)
    if (f.kind == kind) return &f;
  return nullptr;
}

TEST(StoredSessionReview, ThePreAggregatesFindWhatEveryRowFinds) {
  const auto r = review_both_ways("completed");
  expect_same(r.every_row, r.aggregates);
  const auto* inf = find_kind(r.aggregates, "inf_loss");
  ASSERT_NE(inf, nullptr);
  EXPECT_EQ(inf->ranks, std::vector<int>{3});
  EXPECT_EQ(inf->first_step, 30);
  EXPECT_EQ(inf->last_step, 31);
  const auto* streak = find_kind(r.aggregates, "overflow_streak");
  ASSERT_NE(streak, nullptr);
  EXPECT_EQ(streak->first_step, 40);
  EXPECT_EQ(streak->last_step, 45);
  const auto* spike = find_kind(r.aggregates, "loss_spike");
  ASSERT_NE(spike, nullptr);
  EXPECT_EQ(spike->first_step, 60);
  const auto* straggler = find_kind(r.aggregates, "straggler");
  ASSERT_NE(straggler, nullptr);
  EXPECT_EQ(straggler->ranks, std::vector<int>{5});
  EXPECT_NE(straggler->summary.find("slow in forward"), std::string::npos) << straggler->summary;
  EXPECT_EQ(straggler->first_step, kLastOfRank7 - 19);  // the latest 20 steps every rank reported
  EXPECT_EQ(straggler->last_step, kLastOfRank7);
  EXPECT_EQ(find_kind(r.aggregates, "nan_loss"), nullptr);  // SQLite keeps no NaN (docs/doctor.md)
  EXPECT_EQ(find_kind(r.aggregates, "hang"), nullptr);
}

TEST(StoredSessionReview, AnInterruptedSessionsHangIsTheSameFromTheRanksLastSteps) {
  const auto r = review_both_ways("interrupted");
  expect_same(r.every_row, r.aggregates);
  const auto* hang = find_kind(r.aggregates, "hang");
  ASSERT_NE(hang, nullptr);
  EXPECT_NE(hang->evidence.find("last step reported " + std::to_string(kLastOfRank7)), std::string::npos) << hang->evidence;
}

}  // namespace
}  // namespace shardscope::diagnosis
