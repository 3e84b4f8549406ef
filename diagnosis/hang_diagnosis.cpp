#include "diagnosis/hang_diagnosis.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace shardscope::diagnosis {
namespace {

using sessions::CollectiveMark;
using sessions::Finding;

// One rank's marks in the group being diagnosed.
struct RankMarks {
  std::map<std::int64_t, const CollectiveMark*> by_sequence;
  const CollectiveMark* first_open() const {
    for (const auto& [sequence, mark] : by_sequence)
      if (!mark->left_at) return mark;
    return nullptr;
  }
  const CollectiveMark* last_done() const {
    for (auto it = by_sequence.rbegin(); it != by_sequence.rend(); ++it)
      if (it->second->left_at) return it->second;
    return nullptr;
  }
  const CollectiveMark* latest() const { return by_sequence.empty() ? nullptr : by_sequence.rbegin()->second; }
  const CollectiveMark* at(std::int64_t sequence) const {
    const auto it = by_sequence.find(sequence);
    return it == by_sequence.end() ? nullptr : it->second;
  }
};

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

std::string size_text(std::int64_t bytes) {
  char text[32];
  if (bytes >= (1 << 20)) std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  return text;
}

// "all_reduce #118 (grad bucket 3, 4.0 MiB float32, step 41, backward)"; a step below 0 is
// unknown (PyTorch's flight recorder knows none) and left out.
std::string describe(const CollectiveMark& m) {
  std::string text = m.op + " #" + std::to_string(m.sequence) + " (";
  if (!m.tag.empty()) text += m.tag + ", ";
  text += size_text(m.bytes) + (m.dtype.empty() ? "" : " " + m.dtype);
  if (m.step >= 0) text += ", step " + std::to_string(m.step);
  return text + (m.phase.empty() ? "" : ", " + m.phase) + ")";
}

std::string join_ranks(const RunPicture& run, const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + host_rank(run, r);
  return text;
}

// The ranks the group spans: its members when the marks name them, else every rank of the run.
std::vector<int> group_members(const std::vector<const CollectiveMark*>& group_marks, const RunPicture& run) {
  for (const auto* m : group_marks)
    if (!m->group_ranks.empty()) return m->group_ranks;
  int world = run.world_size;
  for (const auto* m : group_marks) world = std::max(world, m->rank + 1);
  std::vector<int> ranks(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) ranks[static_cast<std::size_t>(r)] = r;
  return ranks;
}

// The group whose open collective was entered first: the oldest wait is the one everything queues behind.
std::optional<std::string> stuck_group(const std::vector<CollectiveMark>& marks) {
  const CollectiveMark* oldest = nullptr;
  for (const auto& m : marks)
    if (!m.left_at && (!oldest || m.entered_at < oldest->entered_at)) oldest = &m;
  if (!oldest) return std::nullopt;
  return oldest->group;
}

// One line saying where a rank was.
std::string where_line(const RunPicture& run, int rank, const RankMarks& rm) {
  std::string line = host_rank(run, rank) + ": ";
  if (const auto* open = rm.first_open())
    line += "waits in " + describe(*open) + " since " + seconds(run.now - open->entered_at);
  else
    line += "in no collective";
  if (const auto* done = rm.last_done()) line += "; last completed " + describe(*done);
  else line += "; no collective completed";
  if (const auto* latest = rm.latest(); latest && latest != rm.first_open()) line += "; latest entered " + describe(*latest);
  if (auto it = run.last_step.find(rank); it != run.last_step.end())
    line += "; last step reported " + std::to_string(it->second);
  return line;
}

// The ranks whose mark at `sequence` differs in op or size from what most ranks entered there.
std::vector<int> disagreeing(const std::map<int, RankMarks>& ranks, std::int64_t sequence, std::string& majority) {
  std::map<std::string, std::vector<int>> by_kind;
  for (const auto& [rank, rm] : ranks)
    if (const auto* m = rm.at(sequence)) by_kind[m->op + " of " + size_text(m->bytes)].push_back(rank);
  if (by_kind.size() < 2) return {};
  auto most = std::max_element(by_kind.begin(), by_kind.end(),
                               [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  majority = most->first;
  std::vector<int> odd;
  for (const auto& [kind, members] : by_kind)
    if (kind != majority) odd.insert(odd.end(), members.begin(), members.end());
  std::sort(odd.begin(), odd.end());
  return odd;
}

void fill_behind(Finding& f, const RunPicture& run, const CollectiveMark& target, const std::vector<int>& waiting,
                 const std::vector<int>& behind) {
  f.ranks = behind;
  f.summary = "hang in " + describe(target) + ", group " + target.group + ": " + join_ranks(run, waiting) +
              " wait(s) since " + seconds(run.now - target.entered_at) + "; never entered by " +
              join_ranks(run, behind);
  f.suggested_fix = "Read the log of " + join_ranks(run, behind) +
                    (target.step >= 0 ? " near step " + std::to_string(target.step)
                                      : " around the " + target.op + (target.tag.empty() ? "" : " issued at " + target.tag)) +
                    ": that rank skipped or reordered a collective (a rank-dependent branch, an early exit, another "
                    "number of micro-batches) or is stuck before it (data loading, I/O, a lock). The waiting ranks "
                    "are victims. `--on-hang stop` ends such a run instead of waiting for the c10d watchdog.";
}

void fill_disagreement(Finding& f, const RunPicture& run, const CollectiveMark& target, const std::vector<int>& odd,
                       const std::string& majority) {
  f.ranks = odd;
  f.summary = "ranks disagree about collective #" + std::to_string(target.sequence) + " of group " + target.group +
              (target.step >= 0 ? " (step " + std::to_string(target.step) + ")" : std::string()) + ": most entered it as " + majority + ", " +
              join_ranks(run, odd) + " as something else";
  f.suggested_fix = "Every rank must issue the same collectives in the same order: look on " +
                    join_ranks(run, odd) + " for a collective that only some ranks run (a reduced value logged "
                    "conditionally, a rank-dependent branch, another config or model on that rank).";
}

void fill_inside(Finding& f, const RunPicture& run, const CollectiveMark& target, const std::vector<int>& waiting) {
  f.ranks = waiting;
  f.summary = "every rank entered " + describe(target) + " of group " + target.group + " and none left it for " +
              seconds(run.now - target.entered_at) + ": it hangs inside the collective";
  f.suggested_fix = "Check the network between the hosts (`shardscope preflight`, NCCL_DEBUG=INFO), whether a "
                    "rank's process is stopped (SIGSTOP, a debugger) and the GPUs' health (nvidia-smi -q, Xid "
                    "errors in dmesg).";
}

void fill_outside(Finding& f, const RunPicture& run, const std::map<int, RankMarks>& ranks) {
  std::int64_t lowest = INT64_MAX;
  for (const auto& [rank, rm] : ranks) lowest = std::min(lowest, rm.latest() ? rm.latest()->sequence : 0);
  for (const auto& [rank, rm] : ranks)
    if ((rm.latest() ? rm.latest()->sequence : 0) == lowest) f.ranks.push_back(rank);
  f.summary = "no rank is inside a collective and none makes progress: the run stalls in compute, data loading or "
              "I/O; furthest behind: " + join_ranks(run, f.ranks);
  f.suggested_fix = "Attach a debugger or py-spy to " + join_ranks(run, f.ranks) +
                    " (gdb -p PID, `thread apply all bt`) to see where it is; look for a data loader or file "
                    "system that stopped answering.";
}

}  // namespace

std::string host_rank(const RunPicture& run, int rank) {
  const auto it = run.hosts.find(rank);
  return (it == run.hosts.end() || it->second.empty() ? std::string("?") : it->second) + ":" + std::to_string(rank);
}

Finding diagnose_hang(const std::vector<CollectiveMark>& marks, const RunPicture& run) {
  Finding f;
  f.kind = "hang";
  f.severity = "error";
  f.found_at = run.now;
  const auto group = stuck_group(marks);
  std::vector<const CollectiveMark*> group_marks;
  for (const auto& m : marks)
    if (!group || m.group == *group) group_marks.push_back(&m);
  std::map<int, RankMarks> ranks;
  for (int r : group_members(group_marks, run)) ranks[r];
  for (const auto* m : group_marks) ranks[m->rank].by_sequence[m->sequence] = m;

  const CollectiveMark* target = nullptr;  // the oldest collective some rank still waits in
  for (const auto& [rank, rm] : ranks)
    if (const auto* open = rm.first_open(); open && (!target || open->sequence < target->sequence)) target = open;
  if (!target) {
    fill_outside(f, run, ranks);
  } else {
    std::vector<int> waiting, behind;
    for (const auto& [rank, rm] : ranks) {
      const auto* here = rm.at(target->sequence);
      if (here && !here->left_at) waiting.push_back(rank);
      if (!rm.latest() || rm.latest()->sequence < target->sequence) behind.push_back(rank);
    }
    std::string majority;
    const auto odd = behind.empty() ? disagreeing(ranks, target->sequence, majority) : std::vector<int>{};
    if (!behind.empty()) fill_behind(f, run, *target, waiting, behind);
    else if (!odd.empty()) fill_disagreement(f, run, *target, odd, majority);
    else fill_inside(f, run, *target, waiting);
    f.first_step = f.last_step = target->step;
  }
  std::ostringstream evidence;
  for (const auto& [rank, rm] : ranks) evidence << where_line(run, rank, rm) << "\n";
  f.evidence = evidence.str();
  return f;
}

void MarkBoard::add(const sessions::CollectiveMark& mark) {
  auto& window = by_rank_[{mark.rank, mark.group}];
  auto [it, fresh] = window.try_emplace(mark.sequence, mark);
  if (!fresh && mark.left_at) it->second.left_at = mark.left_at;
  if (mark.left_at) last_completion_ = std::max(last_completion_, *mark.left_at);
  while (window.size() > per_rank_) window.erase(window.begin());
}

std::vector<sessions::CollectiveMark> MarkBoard::marks() const {
  std::vector<sessions::CollectiveMark> all;
  for (const auto& [key, window] : by_rank_)
    for (const auto& [sequence, mark] : window) all.push_back(mark);
  return all;
}

}  // namespace shardscope::diagnosis
