#pragma once
// The run doctor on a session in a store, after the fact (`sessions show`, the GUI's Findings
// tab): the findings the run stored, then what its steps, timers and collective marks show
// (session_review.hpp). The one part of the doctor that reads a store; the rest is pure.

#include <cstdint>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::diagnosis {

/// Every finding of session `id` (whose detail is `detail`), stored ones first.
std::vector<sessions::Finding> review_stored_session(sessions::Store& store, std::int64_t id,
                                                     const sessions::SessionDetail& detail);

}  // namespace shardscope::diagnosis
