// The run doctor's engine side (issue 28): SHARDSCOPE_FAULT's parsing, the collective flight
// record, and its marks streamed from Gloo ranks (threads of this process) to a sink, where a
// skipped collective is diagnosed as the skipping rank's.
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "diagnosis/hang_diagnosis.hpp"
#include "engine/collective_flight_record.hpp"
#include "engine/communicator.hpp"
#include "engine/fault_injection.hpp"
#include "sessions/event_sink.hpp"
#include "tests/engine/rank_threads.hpp"

namespace shardscope::engine {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_fault_spec(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FaultSpec, EveryKindParsesWithItsArgument) {
  auto f = parse_fault_spec("2:7:hang-before-collective:reduce_scatter");
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.step, 7);
  EXPECT_EQ(f.kind, FaultKind::kHangBeforeCollective);
  EXPECT_EQ(f.op, "reduce_scatter");
  EXPECT_EQ(parse_fault_spec("0:1:skip-collective").op, "");
  f = parse_fault_spec("1:3:sleep-in-phase:backward:250");
  EXPECT_EQ(f.kind, FaultKind::kSleepInPhase);
  EXPECT_EQ(f.phase, "backward");
  EXPECT_EQ(f.sleep_ms, 250);
  EXPECT_EQ(parse_fault_spec("0:5:nan-loss").kind, FaultKind::kNanLoss);
  EXPECT_EQ(parse_fault_spec("0:5:oom:64").block_mib, 64);
}

TEST(FaultSpec, MalformedValuesNameTheVariableThePartAndTheForm) {
  EXPECT_NE(parse_error("1:x:nan-loss").find("SHARDSCOPE_FAULT='1:x:nan-loss': STEP 'x'"), std::string::npos);
  EXPECT_NE(parse_error("1:0:nan-loss").find("integer >= 1"), std::string::npos);
  EXPECT_NE(parse_error("1:2:explode").find("unknown fault 'explode'"), std::string::npos);
  EXPECT_NE(parse_error("1:2:skip-collective:alltoall").find("'alltoall' is not all_reduce"), std::string::npos);
  EXPECT_NE(parse_error("1:2:sleep-in-phase:forward").find("needs PHASE:MS"), std::string::npos);
  EXPECT_NE(parse_error("1:2").find("expected RANK:STEP:KIND"), std::string::npos);
}

TEST(FaultSpec, NothingIsActiveUnlessTheVariableIsSet) {
  ::unsetenv(kFaultVariable);
  EXPECT_FALSE(fault_for_rank(0).has_value());
  ::setenv(kFaultVariable, "1:1:nan-loss", 1);
  EXPECT_FALSE(fault_for_rank(0).has_value());  // another rank's
  EXPECT_TRUE(fault_for_rank(1).has_value());
  const auto loss = apply_forward_faults(torch::ones({}), 1, 1, -1);
  EXPECT_TRUE(std::isnan(loss.item<double>()));
  EXPECT_EQ(apply_forward_faults(torch::ones({}), 1, 2, -1).item<double>(), 1.0);  // only its step
  ::unsetenv(kFaultVariable);
}

TEST(FlightRecord, TheRingKeepsTheLatestAndMarksEachEnterAndLeaveOnce) {
  CollectiveFlightRecord record(4);
  for (int s = 1; s <= 6; ++s) record.enter(s, "all_reduce", 64, "Float", "bucket", 3, CollectivePhase::kBackward);
  const auto entries = record.snapshot();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries.front().sequence, 3);
  EXPECT_EQ(record.marks_lost(), 2);  // #1 and #2 were overwritten before anyone took them
  auto marks = record.take_marks(5);
  ASSERT_EQ(marks.size(), 4u);
  EXPECT_EQ(marks[0].rank, 5);
  EXPECT_EQ(marks[0].phase, "backward");
  EXPECT_FALSE(marks[0].left_at.has_value());
  EXPECT_TRUE(record.take_marks(5).empty());
  record.leave(5);
  record.leave(1);  // gone from the ring: ignored
  marks = record.take_marks(5);
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0].sequence, 5);
  EXPECT_TRUE(marks[0].left_at.has_value());
}

// Collects what a rank's reporter sends.
class CapturingSink final : public sessions::EventSink {
 public:
  void send(const sessions::Event& event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto* m = std::get_if<sessions::CollectiveMark>(&event)) marks_.push_back(*m);
  }
  void flush() override {}
  void close() override {}
  std::vector<sessions::CollectiveMark> marks() {
    std::lock_guard<std::mutex> lock(mutex_);
    return marks_;
  }

 private:
  std::mutex mutex_;
  std::vector<sessions::CollectiveMark> marks_;
};

TEST(FlightRecordMultirank, EveryCollectiveIsRecordedWithItsPhaseAndStreamed) {
  ::unsetenv(kFaultVariable);
  std::vector<std::shared_ptr<CapturingSink>> sinks{std::make_shared<CapturingSink>(), std::make_shared<CapturingSink>()};
  std::vector<std::vector<FlightEntry>> records(2);
  testing::run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    comm->set_mark_sink(sinks[static_cast<std::size_t>(r)]);
    auto t = torch::ones({256});
    comm->set_phase(CollectivePhase::kBackward);
    for (int i = 0; i < 3; ++i) comm->all_reduce(t, ReduceOp::kSum, "bucket " + std::to_string(i)).wait();
    comm->report_progress(1);
    comm->set_phase(CollectivePhase::kOptimizer);
    comm->all_reduce_scalar(1.0, ReduceOp::kMax);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the reporter's period is 100 ms here
    records[static_cast<std::size_t>(r)] = comm->flight_record().snapshot();
  }, false, std::chrono::seconds(2));
  for (int r = 0; r < 2; ++r) {
    const auto& entries = records[static_cast<std::size_t>(r)];
    ASSERT_EQ(entries.size(), 4u) << "rank " << r;
    EXPECT_EQ(entries[0].tag, "bucket 0");
    EXPECT_EQ(entries[0].bytes, 256 * 4);
    EXPECT_STREQ(entries[0].dtype, "Float");
    EXPECT_EQ(entries[0].step, 1);
    EXPECT_EQ(entries[3].step, 2);
    EXPECT_EQ(entries[3].phase, CollectivePhase::kOptimizer);
    for (const auto& e : entries) EXPECT_GE(e.left_at, e.entered_at);
    // Each collective reached the sink entered and left (in one mark or two).
    std::map<std::int64_t, bool> left;
    for (const auto& m : sinks[static_cast<std::size_t>(r)]->marks()) left[m.sequence] = left[m.sequence] || m.left_at;
    ASSERT_EQ(left.size(), 4u) << "rank " << r;
    for (const auto& [sequence, done] : left) EXPECT_TRUE(done) << "rank " << r << " #" << sequence;
  }
}

TEST(FlightRecordMultirank, ASkippedCollectiveIsPinnedOnTheRankThatSkippedIt) {
  ::setenv(kFaultVariable, "1:1:skip-collective:all_gather", 1);
  std::vector<std::shared_ptr<CapturingSink>> sinks;
  for (int r = 0; r < 3; ++r) sinks.push_back(std::make_shared<CapturingSink>());
  std::vector<int> timed_out(3, 0);
  testing::run_ranks(3, [&](int r, std::shared_ptr<Communicator> comm) {
    comm->set_mark_sink(sinks[static_cast<std::size_t>(r)]);
    auto t = torch::ones({64});
    comm->all_reduce(t).wait();
    comm->all_reduce(t).wait();
    auto gathered = torch::zeros({64 * 3});
    try {
      comm->all_gather(gathered, t, "gather layer.0").wait();  // rank 1 skips it: the others wait
    } catch (const CommTimeout&) {
      timed_out[static_cast<std::size_t>(r)] = 1;
    }
    // Rank 1 stays until the others gave up, so they time out instead of losing their peer.
    std::this_thread::sleep_for(std::chrono::milliseconds(r == 1 ? 3000 : 500));
  }, false, std::chrono::seconds(2));
  ::unsetenv(kFaultVariable);
  EXPECT_EQ(timed_out, (std::vector<int>{1, 0, 1}));
  std::vector<sessions::CollectiveMark> marks;
  for (const auto& sink : sinks)
    for (const auto& m : sink->marks()) marks.push_back(m);
  diagnosis::RunPicture run;
  run.world_size = 3;
  run.now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto finding = diagnosis::diagnose_hang(marks, run);
  EXPECT_EQ(finding.ranks, std::vector<int>{1}) << finding.summary << "\n" << finding.evidence;
  EXPECT_NE(finding.summary.find("all_gather #3 (gather layer.0"), std::string::npos) << finding.summary;
  EXPECT_NE(finding.summary.find("never entered by ?:1"), std::string::npos) << finding.summary;
}

}  // namespace
}  // namespace shardscope::engine
