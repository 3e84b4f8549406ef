#include "diagnosis/findings_compare.hpp"

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

sessions::Finding finding(const std::string& kind, std::vector<int> ranks, std::int64_t step) {
  sessions::Finding f;
  f.kind = kind;
  f.severity = "error";
  f.ranks = std::move(ranks);
  f.first_step = f.last_step = step;
  f.summary = kind + " at step " + std::to_string(step);
  return f;
}

TEST(FindingsCompare, AFindingOfTheSameKindAndRanksIsKeptWhateverItsStep) {
  const auto rows = compare_findings({{finding("hang", {2}, 3), finding("straggler", {1}, 40)},
                                      {finding("straggler", {1}, 55), finding("nan_loss", {0, 1}, 9)}});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].kind, "hang");
  EXPECT_EQ(rows[0].changes, (std::vector<FindingChange>{FindingChange::kBaseline, FindingChange::kGone}));
  EXPECT_FALSE(rows[0].cells[1].has_value());
  EXPECT_EQ(rows[1].kind, "straggler");
  EXPECT_EQ(rows[1].changes[1], FindingChange::kKept);
  EXPECT_EQ(rows[1].cells[1]->first_step, 55);
  EXPECT_EQ(rows[2].kind, "nan_loss");
  EXPECT_EQ(rows[2].changes, (std::vector<FindingChange>{FindingChange::kAbsent, FindingChange::kNew}));
}

TEST(FindingsCompare, OtherRanksMakeAnotherFindingAndRepeatsMatchInOrder) {
  const auto rows = compare_findings({{finding("loss_spike", {0}, 10), finding("loss_spike", {0}, 20),
                                       finding("hang", {2}, 3)},
                                      {finding("loss_spike", {0}, 12), finding("hang", {3}, 3)},
                                      {}});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].ordinal, 0);
  EXPECT_EQ(rows[0].changes[1], FindingChange::kKept);
  EXPECT_EQ(rows[1].ordinal, 1);
  EXPECT_EQ(rows[1].changes[1], FindingChange::kGone);
  EXPECT_EQ(rows[3].ranks, std::vector<int>{3});
  EXPECT_EQ(rows[3].changes[1], FindingChange::kNew);
  EXPECT_EQ(rows[3].changes[2], FindingChange::kAbsent);
  for (const auto& row : {rows[0], rows[1], rows[2]}) EXPECT_EQ(row.changes[2], FindingChange::kGone);
  EXPECT_STREQ(finding_change_name(FindingChange::kAbsent), "");
}

TEST(FindingsCompare, RanksAreComparedAsASet) {
  const auto rows = compare_findings({{finding("nan_loss", {1, 0}, 9)}, {finding("nan_loss", {0, 1, 1}, 9)}});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].changes[1], FindingChange::kKept);
}

}  // namespace
}  // namespace shardscope::diagnosis
