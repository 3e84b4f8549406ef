#include "diagnosis/hang_diagnosis.hpp"

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

using sessions::CollectiveMark;

CollectiveMark mark(int rank, std::int64_t sequence, const std::string& op, std::int64_t bytes, bool left,
                    std::int64_t step = 41, const std::string& phase = "backward") {
  CollectiveMark m;
  m.rank = rank;
  m.sequence = sequence;
  m.op = op;
  m.bytes = bytes;
  m.dtype = "float32";
  m.step = step;
  m.phase = phase;
  m.entered_at = 1000 + static_cast<double>(sequence);
  if (left) m.left_at = m.entered_at + 0.5;
  return m;
}

RunPicture four_ranks() {
  RunPicture run;
  run.world_size = 4;
  run.hosts = {{0, "node-a"}, {1, "node-a"}, {2, "node-b"}, {3, "node-b"}};
  run.now = 1100;
  return run;
}

// Ranks 0, 1 and 3 issued collective #10; rank 2 stopped after #9.
std::vector<CollectiveMark> rank_two_never_enters() {
  std::vector<CollectiveMark> marks;
  for (int r = 0; r < 4; ++r) {
    marks.push_back(mark(r, 9, "all_gather", 1 << 20, true));
    if (r != 2) marks.push_back(mark(r, 10, "all_reduce", 4 << 20, false));
  }
  return marks;
}

TEST(HangDiagnosis, TheRankThatNeverEnteredIsTheCulpritNotTheWaiters) {
  const auto f = diagnose_hang(rank_two_never_enters(), four_ranks());
  EXPECT_EQ(f.kind, "hang");
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_NE(f.summary.find("all_reduce #10"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("never entered by node-b:2"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("node-a:0, node-a:1, node-b:3 wait"), std::string::npos) << f.summary;
  EXPECT_EQ(f.first_step, 41);
  EXPECT_NE(f.evidence.find("node-b:2: in no collective; last completed all_gather #9"), std::string::npos)
      << f.evidence;
}

TEST(HangDiagnosis, OverlappedCollectivesStillPointAtTheOldestWait) {
  auto marks = rank_two_never_enters();
  for (int r : {0, 1, 3}) marks.push_back(mark(r, 11, "all_reduce", 4 << 20, false));
  const auto f = diagnose_hang(marks, four_ranks());
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_NE(f.summary.find("#10"), std::string::npos) << f.summary;
}

TEST(HangDiagnosis, ARankThatSkippedACollectiveDisagreesAboutTheNextOne) {
  std::vector<CollectiveMark> marks;
  for (int r = 0; r < 4; ++r) {
    marks.push_back(mark(r, 9, "all_gather", 1 << 20, true));
    // Rank 1 skipped the all_reduce: its #10 is the reduce_scatter the others issue next.
    marks.push_back(r == 1 ? mark(r, 10, "reduce_scatter", 2 << 20, false) : mark(r, 10, "all_reduce", 4 << 20, false));
  }
  const auto f = diagnose_hang(marks, four_ranks());
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_NE(f.summary.find("disagree about collective #10"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("all_reduce of 4.0 MiB"), std::string::npos) << f.summary;
}

TEST(HangDiagnosis, EveryRankInsideTheSameCollectiveIsAHangInsideIt) {
  std::vector<CollectiveMark> marks;
  for (int r = 0; r < 4; ++r) marks.push_back(mark(r, 10, "all_reduce", 4 << 20, false));
  const auto f = diagnose_hang(marks, four_ranks());
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(f.summary.find("hangs inside the collective"), std::string::npos) << f.summary;
}

TEST(HangDiagnosis, NoRankInACollectiveNamesTheRankFurthestBehind) {
  std::vector<CollectiveMark> marks;
  for (int r = 0; r < 4; ++r) marks.push_back(mark(r, r == 3 ? 8 : 9, "all_reduce", 4 << 20, true));
  const auto f = diagnose_hang(marks, four_ranks());
  EXPECT_EQ(f.ranks, std::vector<int>{3});
  EXPECT_NE(f.summary.find("no rank is inside a collective"), std::string::npos) << f.summary;
}

TEST(HangDiagnosis, ARankWithNoMarksAtAllIsBehind) {
  auto marks = rank_two_never_enters();
  marks.erase(std::remove_if(marks.begin(), marks.end(), [](const CollectiveMark& m) { return m.rank == 2; }),
              marks.end());
  const auto f = diagnose_hang(marks, four_ranks());
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_NE(f.evidence.find("node-b:2: in no collective; no collective completed"), std::string::npos) << f.evidence;
}

TEST(MarkBoard, ALeaveCompletesItsEnterAndTheWindowIsBounded) {
  MarkBoard board(3);
  for (int s = 1; s <= 5; ++s) board.add(mark(0, s, "all_reduce", 8, false));
  auto leave = mark(0, 5, "all_reduce", 8, true);
  board.add(leave);
  const auto marks = board.marks();
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks.front().sequence, 3);
  EXPECT_TRUE(marks.back().left_at.has_value());
  EXPECT_FALSE(marks[1].left_at.has_value());
  EXPECT_DOUBLE_EQ(board.last_completion(), *leave.left_at);
}

}  // namespace
}  // namespace shardscope::diagnosis
