#pragma once
// The effective config as one JSON document (what a session records and what `sessions compare`
// diffs): the resolved view's dotted paths nested back into objects.

#include <string>
#include <vector>

#include "configs/config_validator.hpp"

namespace shardscope::configs {

/// {"zero_optimization": {"stage": 2, ...}, ...} from the resolved view, keys in schema order.
std::string resolved_config_json(const std::vector<ResolvedValue>& resolved);

}  // namespace shardscope::configs
