#pragma once
// Which ranks of a many-rank session to show: the text a user types into a rank filter
// ("0-63", "0-7,12", "node3", "node3,node5,1000-1023") resolved against the session's ranks and
// hosts. One parser for every page and command that takes a rank filter, so they agree.

#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

/// The ranks `text` names, sorted and without repeats. Items are separated by commas (spaces
/// allowed): a rank `12`, a range `0-63` (both ends included), or a host name of the session
/// (every rank on it; a host whose name looks like a range, `gpu-1`, is a host). Empty text or
/// `all` is every rank. Throws SessionsError(kInvalidArgument) naming the item, why it is wrong
/// and what to write instead (an unknown host lists the session's hosts).
std::vector<int> parse_rank_selection(const std::string& text, const std::vector<RankInfo>& ranks);

/// The inverse, short: "0-7,12,100-163" (consecutive ranks folded into ranges).
std::string format_rank_selection(const std::vector<int>& ranks);

}  // namespace shardscope::sessions
