#include "diagnosis/session_review.hpp"

#include <limits>

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

SessionMaterial material_with_open_collective(const std::string& status) {
  SessionMaterial m;
  m.status = status;
  m.run.world_size = 2;
  sessions::CollectiveMark waiting;
  waiting.rank = 0;
  waiting.sequence = 4;
  waiting.op = "all_reduce";
  waiting.entered_at = 10;
  m.marks.push_back(waiting);
  m.run.now = 20;
  return m;
}

TEST(SessionReview, ARunThatNeverEndedWithAnOpenCollectiveIsDiagnosedAsAHang) {
  const auto findings = review_session(material_with_open_collective("failed"));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "hang");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
}

TEST(SessionReview, ACompletedRunIsNoHangAndAStoredHangIsNotRepeated) {
  EXPECT_TRUE(review_session(material_with_open_collective("completed")).empty());
  auto m = material_with_open_collective("interrupted");
  sessions::Finding stored;
  stored.kind = "hang";
  stored.summary = "diagnosed live";
  m.stored.push_back(stored);
  const auto findings = review_session(m);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].summary, "diagnosed live");
}

TEST(SessionReview, NumericsComeFromTheSteps) {
  SessionMaterial m;
  m.status = "completed";
  for (int s = 1; s <= 10; ++s) {
    sessions::StepMetrics step;
    step.step = s;
    step.loss = s < 7 ? 2.0 : std::numeric_limits<double>::quiet_NaN();
    m.steps.push_back(step);
  }
  const auto findings = review_session(m);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "nan_loss");
  EXPECT_EQ(findings[0].first_step, 7);
}

}  // namespace
}  // namespace shardscope::diagnosis
