#pragma once
// shardscope-load's second phase (--query-steps): a session of S steps x 8 ranks written straight
// into a store, then the reader's queries timed on it (the collector bench's phase 2).

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::app {

struct QueryTiming {
  std::string name;
  double ms = 0;
};

struct QueryPhase {
  double fill_s = 0;                  ///< writing the session
  std::vector<QueryTiming> queries;
};

/// Writes `steps` x 8 ranks into a fresh store at `path` (removed afterwards) and times the queries.
QueryPhase time_queries(const std::string& path, std::int64_t steps);

}  // namespace shardscope::app
