#include "sessions/rank_selection.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include "sessions/errors.hpp"

namespace shardscope::sessions {
namespace {

constexpr const char* kForm = "write ranks and ranges like 0-7,12 or a host name such as node3";

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::optional<int> number(const std::string& s) {
  int value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

[[noreturn]] void refuse(const std::string& item, const std::string& why) {
  throw SessionsError(ErrorKind::kInvalidArgument, "rank filter '" + item + "': " + why);
}

std::string rank_span(const std::vector<RankInfo>& ranks) {
  if (ranks.empty()) return "the session has no ranks";
  int low = ranks.front().rank, high = low;
  for (const auto& r : ranks) low = std::min(low, r.rank), high = std::max(high, r.rank);
  return "the session's ranks are " + std::to_string(low) + "-" + std::to_string(high);
}

std::string host_list(const std::vector<RankInfo>& ranks) {
  std::set<std::string> hosts;
  for (const auto& r : ranks)
    if (!r.host.empty()) hosts.insert(r.host);
  if (hosts.empty()) return "the session names no hosts";
  std::string out = "its hosts are ";
  int shown = 0;
  for (const auto& h : hosts) {
    if (shown == 8) return out + ", ... (" + std::to_string(hosts.size()) + " hosts)";
    out += (shown++ ? ", " : "") + h;
  }
  return out;
}

void add_rank(const std::string& item, int rank, const std::set<int>& known, const std::vector<RankInfo>& ranks,
              std::set<int>& out) {
  if (!known.count(rank)) refuse(item, "rank " + std::to_string(rank) + " is not in this session; " + rank_span(ranks));
  out.insert(rank);
}

// "A-B": both ends numbers, A <= B; the ranks of the session between them.
bool add_range(const std::string& item, const std::set<int>& known, const std::vector<RankInfo>& ranks,
               std::set<int>& out) {
  const auto dash = item.find('-', 1);
  if (dash == std::string::npos) return false;
  const auto low = number(trim(item.substr(0, dash))), high = number(trim(item.substr(dash + 1)));
  if (!low || !high) return false;
  if (*low > *high)
    refuse(item, "the range runs backwards; write " + std::to_string(*high) + "-" + std::to_string(*low));
  const auto first = known.lower_bound(*low), last = known.upper_bound(*high);
  if (first == last) refuse(item, "no rank of this session is in the range; " + rank_span(ranks));
  out.insert(first, last);
  return true;
}

bool add_host(const std::string& item, const std::vector<RankInfo>& ranks, std::set<int>& out) {
  bool found = false;
  for (const auto& r : ranks)
    if (r.host == item) out.insert(r.rank), found = true;
  return found;
}

void add_item(const std::string& item, const std::set<int>& known, const std::vector<RankInfo>& ranks,
              std::set<int>& out) {
  if (item.empty()) refuse(item, std::string("an empty item (two commas in a row?); ") + kForm);
  if (add_host(item, ranks, out)) return;  // first: a host may be called "gpu-1"
  if (const auto rank = number(item)) return add_rank(item, *rank, known, ranks, out);
  if (add_range(item, known, ranks, out)) return;
  const bool looks_numeric = std::isdigit(static_cast<unsigned char>(item.front())) || item.front() == '-';
  if (looks_numeric) refuse(item, std::string("not a rank or a range of ranks; ") + kForm);
  refuse(item, "no host of that name in this session (" + host_list(ranks) + "); " + kForm);
}

}  // namespace

std::vector<int> parse_rank_selection(const std::string& text, const std::vector<RankInfo>& ranks) {
  std::set<int> known;
  for (const auto& r : ranks) known.insert(r.rank);
  const std::string whole = trim(text);
  if (whole.empty() || whole == "all") return {known.begin(), known.end()};
  std::set<int> out;
  std::size_t from = 0;
  while (from <= whole.size()) {
    const auto comma = std::min(whole.find(',', from), whole.size());
    add_item(trim(whole.substr(from, comma - from)), known, ranks, out);
    from = comma + 1;
  }
  return {out.begin(), out.end()};
}

std::string format_rank_selection(const std::vector<int>& ranks) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(sorted[i]) + (j > i ? "-" + std::to_string(sorted[j]) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace shardscope::sessions
