#pragma once
// The run doctor's material in a session (schema 7): the ranks' latest collective marks and the
// findings made of them. Reading only; StoreWriter writes both from CollectiveMark and Finding events.

#include <cstdint>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class Store;

/// The findings of a session in the order they were made.
std::vector<Finding> load_findings(Store& store, std::int64_t session_id);
/// The collective marks the store keeps (the latest kCollectivesKept of each rank and group), by
/// rank, group and sequence.
std::vector<CollectiveMark> load_collective_marks(Store& store, std::int64_t session_id);

}  // namespace shardscope::sessions
