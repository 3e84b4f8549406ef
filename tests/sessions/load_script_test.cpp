// shardscope-load's scripts (sessions/load_script.hpp): the synthetic run's shape, and a recorded
// session replayed as more ranks and more steps than it has.
#include <gtest/gtest.h>

#include <algorithm>

#include "session_fixtures.hpp"
#include "sessions/errors.hpp"
#include "sessions/load_script.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::sessions {
namespace {

std::size_t records_of(const std::vector<Event>& events) {
  std::size_t n = 0;
  for (const auto& e : events) n += event_record_count(e);
  return n;
}

template <typename T>
std::vector<T> all_of(const std::vector<Event>& events) {
  std::vector<T> out;
  for (const auto& e : events)
    if (const auto* t = std::get_if<T>(&e)) out.push_back(*t);
  return out;
}

TEST(LoadScript, ASyntheticStepHasTheEnginesShapeAndTheWindowComesOnce) {
  SyntheticRunOptions o;
  o.window_step = 2;
  o.kernels = 2500;
  o.log_every = 2;
  const auto script = make_synthetic_script(o);
  std::vector<Event> step0, step1, step2, other_rank;
  script->step_events(5, 64, 0, step0);
  script->step_events(5, 64, 1, step1);
  script->step_events(0, 64, 2, step2);
  script->step_events(1, 64, 2, other_rank);
  EXPECT_EQ(records_of(step0), 6u + 5 + 3 + 1);  // marks, timers, collectives, the step
  EXPECT_EQ(records_of(step1), 6u + 5 + 3 + 1 + 1);  // step 2 logs
  for (const auto& m : all_of<CollectiveMark>(step0)) EXPECT_EQ(m.rank, 5);
  EXPECT_EQ(all_of<StepMetrics>(step0).at(0).rank, 5);
  EXPECT_EQ(all_of<TimerBreakdown>(step0).at(0).rank, 5);
  for (const auto& c : all_of<CommRecord>(step0)) EXPECT_EQ(c.rank, 5);
  // Rank 0 ships 2,500 activity records in batches of at most 1,000, and 50 NVTX ranges.
  EXPECT_EQ(all_of<ActivityBatch>(step2).size(), 3u);
  EXPECT_EQ(records_of(step2), records_of(other_rank) + 2500 + 50);
  const auto marks = all_of<CollectiveMark>(step1);
  ASSERT_EQ(marks.size(), 6u);
  EXPECT_EQ(marks[0].sequence, 4);  // three collectives a step, numbered from 1
  EXPECT_FALSE(marks[0].left_at);
  EXPECT_TRUE(marks[1].left_at);
  EXPECT_EQ(script->run_start(16).ranks.size(), 16u);
}

TEST(LoadScript, ARecordedSessionReplaysAsMoreRanksAndLapsOnPastItsEnd) {
  const auto path = testing::temp_path("load_recorded");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    auto events = testing::sample_steps(2, 4);  // steps 0..3 of ranks 0 and 1
    events.insert(events.begin(), testing::sample_run_start("recorded", 2, "{}"));
    events.push_back(ActivityBatch{1, {{ActivityKind::kKernel, "gemm", 10, 20, 0, 7, 0, 2}}});
    events.push_back(LogLine{0, 0, LogLevel::kInfo, "hello"});
    writer.write("recorded-uid", events);
  }
  Store store = Store::open(path);
  const auto script = read_recorded_script(store, find_session(store, "recorded"));
  // Rank 5 plays recorded rank 1; its index 6 is recorded step 2 in the second lap (step 6).
  std::vector<Event> events;
  script->step_events(5, 8, 6, events);
  const auto steps = all_of<StepMetrics>(events);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].rank, 5);
  EXPECT_EQ(steps[0].step, 6);
  const auto kernels = all_of<ActivityBatch>(events);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].rank, 5);
  EXPECT_EQ(kernels[0].records.at(0).step, 6);
  EXPECT_EQ(all_of<TimerBreakdown>(events).at(0).step, 6);
  EXPECT_EQ(all_of<CommRecord>(events).at(0).rank, 5);
  EXPECT_DOUBLE_EQ(script->recorded_step_ms(5, 6), 100 + 2 * 2);  // rank 1's step 2
  std::vector<Event> first;
  script->step_events(0, 8, 0, first);
  EXPECT_EQ(all_of<LogLine>(first).size(), 1u);  // logged before step 0 ended
  EXPECT_EQ(script->run_start(8).world_size, 8);
  testing::remove_store(path);
}

TEST(LoadScript, ASessionWithoutStepsIsRefusedByName) {
  const auto path = testing::temp_path("load_empty");
  {
    Store store = Store::open_or_create(path);
    StoreWriter(store).write("empty-uid", {testing::sample_run_start("nothing-yet", 2, "{}")});
  }
  Store store = Store::open(path);
  try {
    read_recorded_script(store, find_session(store, "nothing-yet"));
    FAIL() << "expected a refusal";
  } catch (const SessionsError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing-yet"), std::string::npos) << e.what();
  }
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
