#pragma once
// How Python prints JSON values: transformers builds its mismatch messages with f"{value}", so
// reproducing them byte for byte needs Python's str() of ints, floats (shortest round-trip repr,
// "1e-05", "200000000.0"), bools ("True"), None, strings and lists ("[0.9, 0.999]").

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "configs/config_node.hpp"

namespace shardscope::configs {

/// Python's repr() of a float: the shortest text that reads back to the same double, with an
/// exponent below 1e-4 and from 1e16 ("1e-05", "1e+16"), else fixed ("0.001", "2.0").
std::string python_float_repr(double value);
/// Python's str() of the value json.load() makes of `node` (strings unquoted at the top level).
std::string python_str(const ConfigNode& node);
/// Python's str() of a JSON value.
std::string python_str(const nlohmann::json& value);
/// Python's `a == b` for the values json.load() makes of `node` and of `value`
/// (True == 1 == 1.0, lists element-wise, dicts by keys).
bool python_equal(const ConfigNode& node, const nlohmann::json& value);

}  // namespace shardscope::configs
