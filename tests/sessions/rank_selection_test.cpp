// The rank filter of many-rank sessions: ranks, ranges, hosts, and what a bad item is told.
#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/rank_selection.hpp"

namespace shardscope::sessions {
namespace {

// 4 hosts x 8 ranks: node0 holds 0-7, ..., node3 holds 24-31; "gpu-1" is a host named like a range.
std::vector<RankInfo> cluster(int hosts = 4, const std::string& prefix = "node") {
  std::vector<RankInfo> ranks;
  for (int h = 0; h < hosts; ++h)
    for (int l = 0; l < 8; ++l) ranks.push_back({h * 8 + l, l, prefix + std::to_string(h), 0, "cuda:" + std::to_string(l)});
  return ranks;
}

std::vector<int> span(int first, int last) {
  std::vector<int> out;
  for (int r = first; r <= last; ++r) out.push_back(r);
  return out;
}

std::string refusal(const std::string& text, const std::vector<RankInfo>& ranks) {
  try {
    parse_rank_selection(text, ranks);
  } catch (const SessionsError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return {};
}

TEST(RankSelection, EmptyOrAllIsEveryRank) {
  EXPECT_EQ(parse_rank_selection("", cluster()), span(0, 31));
  EXPECT_EQ(parse_rank_selection("  all ", cluster()), span(0, 31));
}

TEST(RankSelection, RanksRangesAndHostsCombineSortedWithoutRepeats) {
  EXPECT_EQ(parse_rank_selection("12", cluster()), std::vector<int>{12});
  EXPECT_EQ(parse_rank_selection("0-7,12", cluster()), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 12}));
  EXPECT_EQ(parse_rank_selection("node3", cluster()), span(24, 31));
  EXPECT_EQ(parse_rank_selection(" 30 , node3, 5 - 6 ,6", cluster()), (std::vector<int>{5, 6, 24, 25, 26, 27, 28, 29, 30, 31}));
}

TEST(RankSelection, ARangePastTheLastRankTakesTheRanksInIt) {
  EXPECT_EQ(parse_rank_selection("0-63", cluster()), span(0, 31));
}

TEST(RankSelection, AHostNamedLikeARangeIsTheHost) {
  EXPECT_EQ(parse_rank_selection("gpu-1", cluster(2, "gpu-")), span(8, 15));
}

TEST(RankSelection, BadItemsAreNamedWithTheRemedy) {
  EXPECT_EQ(refusal("0-x", cluster()),
            "rank filter '0-x': not a rank or a range of ranks; write ranks and ranges like 0-7,12 or a host name such as node3");
  EXPECT_EQ(refusal("node9", cluster()),
            "rank filter 'node9': no host of that name in this session (its hosts are node0, node1, node2, node3); "
            "write ranks and ranges like 0-7,12 or a host name such as node3");
  EXPECT_EQ(refusal("7-0", cluster()), "rank filter '7-0': the range runs backwards; write 0-7");
  EXPECT_EQ(refusal("40", cluster()), "rank filter '40': rank 40 is not in this session; the session's ranks are 0-31");
  EXPECT_EQ(refusal("100-200", cluster()),
            "rank filter '100-200': no rank of this session is in the range; the session's ranks are 0-31");
  EXPECT_EQ(refusal("0-7,,9", cluster()),
            "rank filter '': an empty item (two commas in a row?); write ranks and ranges like 0-7,12 or a host name such as node3");
  EXPECT_EQ(refusal("1-2-3", cluster()),
            "rank filter '1-2-3': not a rank or a range of ranks; write ranks and ranges like 0-7,12 or a host name such as node3");
  EXPECT_NE(refusal("node12", cluster(12)).find("node0, node1, node10, node11, node2, node3, node4, node5, ... (12 hosts)"),
            std::string::npos);
}

TEST(RankSelection, FormatFoldsRunsIntoRanges) {
  EXPECT_EQ(format_rank_selection({12, 0, 1, 2, 3, 7, 100, 101}), "0-3,7,12,100-101");
  EXPECT_EQ(format_rank_selection({}), "");
  EXPECT_EQ(parse_rank_selection(format_rank_selection({0, 1, 2, 9, 24}), cluster()), (std::vector<int>{0, 1, 2, 9, 24}));
}

}  // namespace
}  // namespace shardscope::sessions
