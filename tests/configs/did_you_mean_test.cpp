// closest_match / edit_distance: the suggestions behind every "did you mean".
#include <gtest/gtest.h>

#include "configs/did_you_mean.hpp"

namespace shardscope::configs {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndTranspositions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("stage", "stage"), 0u);
  EXPECT_EQ(edit_distance("stage", "stages"), 1u);   // insertion
  EXPECT_EQ(edit_distance("stage", "stag"), 1u);     // deletion
  EXPECT_EQ(edit_distance("stage", "stake"), 1u);    // substitution
  EXPECT_EQ(edit_distance("stage", "tsage"), 1u);    // adjacent transposition
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u); // the textbook case
  EXPECT_EQ(edit_distance("Stage", "stage"), 1u);    // case-sensitive
}

TEST(ClosestMatch, FindsPlausibleTypos) {
  const std::vector<std::string> keys = {"gradient_clipping", "gradient_accumulation_steps",
                                         "train_batch_size"};
  EXPECT_EQ(closest_match("gradient_clipp1ng", keys).value_or(""), "gradient_clipping");
  EXPECT_EQ(closest_match("train_batch_sise", keys).value_or(""), "train_batch_size");
  EXPECT_EQ(closest_match("TRAIN_BATCH_SIZE", keys).value_or(""), "train_batch_size");
}

TEST(ClosestMatch, RejectsDistantWords) {
  const std::vector<std::string> keys = {"fp16", "bf16", "amp"};
  EXPECT_FALSE(closest_match("fp32_master", keys).has_value());
  EXPECT_FALSE(closest_match("x", std::vector<std::string>{}).has_value());
  // "fp32" is two substitutions from "fp16", above the limit max(1, 4/3) = 1.
  EXPECT_FALSE(closest_match("fp32", keys).has_value());
}

TEST(ClosestMatch, TiesGoToTheEarlierCandidate) {
  EXPECT_EQ(closest_match("cat", {"bat", "hat"}).value_or(""), "bat");
  EXPECT_EQ(closest_match("cat", {"hat", "bat"}).value_or(""), "hat");
}

}  // namespace
}  // namespace shardscope::configs
