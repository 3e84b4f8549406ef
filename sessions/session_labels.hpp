#pragma once
// What a person changes about a recorded session after the fact: its name and its tags (W&B's
// and MLflow's habit of labelling runs to find them again). Each change is one transaction on
// the store; the run's records are never touched. CLI twins: `shardscope sessions rename` and
// `shardscope sessions tag`; the GUI's Sessions page calls the same functions.

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::sessions {

class Store;

/// Renames session `session_id`. Throws SessionsError(kInvalidArgument) for an empty or
/// whitespace-only name and StoreError(kNotFound) for an unknown session.
void rename_session(Store& store, std::int64_t session_id, const std::string& name);

/// Adds `add` and removes `remove` (absent tags are ignored) in one transaction; returns the
/// session's tags afterwards, sorted. A tag is non-empty text without leading or trailing
/// whitespace and without commas (lists are comma-separated); anything else is refused with
/// SessionsError(kInvalidArgument) before anything is written.
std::vector<std::string> edit_session_tags(Store& store, std::int64_t session_id, const std::vector<std::string>& add,
                                           const std::vector<std::string>& remove);

}  // namespace shardscope::sessions
