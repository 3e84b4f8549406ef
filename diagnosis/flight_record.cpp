// Judging a run's flight recorder dumps (flight_record.hpp): the collectives of every rank with
// their groups' members filled in, then the hang diagnosis every other path of the doctor uses.
#include "diagnosis/flight_record.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

namespace shardscope::diagnosis {
namespace {

using sessions::CollectiveMark;

// torch's default group is named "0" (group_name() writes "default_pg (pg 0)").
bool is_default_group(const std::string& group) {
  const std::string tail = "(pg 0)";
  return group == "pg 0" || (group.size() > tail.size() && group.compare(group.size() - tail.size(), tail.size(), tail) == 0);
}

// The members of each group whose marks name none: every rank for the default group (pg 0),
// else the ranks that recorded a collective of it.
std::map<std::string, std::vector<int>> inferred_members(const std::vector<FlightRecordDump>& dumps, int world_size) {
  std::map<std::string, std::set<int>> seen;
  for (const auto& d : dumps)
    for (const auto& m : d.collectives) seen[m.group].insert(d.rank);
  std::map<std::string, std::vector<int>> members;
  for (const auto& [group, ranks] : seen) {
    if (!is_default_group(group)) {
      members[group].assign(ranks.begin(), ranks.end());
      continue;
    }
    for (int r = 0; r < world_size; ++r) members[group].push_back(r);
  }
  return members;
}

std::string utc_text(double unix_seconds) {
  const std::time_t whole = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char text[48];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%06.3f UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec + (unix_seconds - static_cast<double>(whole)));
  return text;
}

// "rank 1: nccl_trace_rank_1 (pickle, format 2.10): 7 collectives, the oldest open all_reduce #6
// entered 2026-12-07 10:14:37.300 UTC; default_pg (pg 0): last enqueued #6, last completed #5"
std::string dump_line(const FlightRecordDump& d) {
  std::string line = "rank " + std::to_string(d.rank) + ": " + d.file + " (" + d.format + ", format " + d.version +
                     "): " + std::to_string(d.collectives.size()) + " collectives";
  if (d.point_to_point) line += " and " + std::to_string(d.point_to_point) + " send/recv (not judged)";
  const auto open = std::find_if(d.collectives.begin(), d.collectives.end(), [](const CollectiveMark& m) { return !m.left_at; });
  if (open != d.collectives.end())
    line += ", the oldest open " + open->op + " #" + std::to_string(open->sequence) + " of " + open->group + " entered " +
            utc_text(open->entered_at);
  for (const auto& [group, status] : d.group_status) line += "; " + group + ": " + status;
  return line;
}

sessions::Finding nothing_open(const std::vector<FlightRecordDump>& dumps, const RunPicture& run) {
  sessions::Finding f;
  f.kind = "flight_record";
  f.severity = "info";
  f.found_at = run.now;
  f.summary = "no collective is open in the flight records of " + std::to_string(dumps.size()) +
              " rank(s): every recorded collective completed, so no rank waits in one";
  f.suggested_fix = "If the run hung, it hung outside the collectives (compute, data loading, I/O): attach py-spy "
                    "or gdb to the ranks. A dump taken before the hang (TORCH_NCCL_DUMP_ON_TIMEOUT writes at the "
                    "watchdog's timeout) shows the collective they wait in.";
  return f;
}

}  // namespace

int flight_record_world_size(const std::vector<FlightRecordDump>& dumps) {
  int world = 0;
  for (const auto& d : dumps) world = std::max({world, d.rank + 1, d.world_size_hint});
  return world;
}

std::vector<CollectiveMark> flight_record_marks(const std::vector<FlightRecordDump>& dumps, int world_size) {
  const auto members = inferred_members(dumps, std::max(world_size, flight_record_world_size(dumps)));
  std::vector<CollectiveMark> marks;
  for (const auto& d : dumps)
    for (auto m : d.collectives) {
      if (m.group_ranks.empty()) m.group_ranks = members.at(m.group);
      marks.push_back(std::move(m));
    }
  return marks;
}

sessions::Finding diagnose_flight_records(const std::vector<FlightRecordDump>& dumps, RunPicture run) {
  run.world_size = std::max(run.world_size, flight_record_world_size(dumps));
  const auto marks = flight_record_marks(dumps, run.world_size);
  const bool open = std::any_of(marks.begin(), marks.end(), [](const CollectiveMark& m) { return !m.left_at; });
  sessions::Finding f = open ? diagnose_hang(marks, run) : nothing_open(dumps, run);
  std::set<int> dumped;
  for (const auto& d : dumps) {
    f.evidence += dump_line(d) + "\n";
    dumped.insert(d.rank);
  }
  for (int r = 0; r < run.world_size; ++r)
    if (!dumped.count(r))
      f.evidence += "rank " + std::to_string(r) + ": no dump read (the rank may have died before the watchdog "
                    "wrote one, or its file was not given): it counts as having entered nothing\n";
  return f;
}

}  // namespace shardscope::diagnosis
