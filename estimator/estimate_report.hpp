#pragma once
// An Estimate as JSON (schema shardscope.estimate/1, every size in bytes, each number with the
// formula that gives it) and as the text `shardscope estimate` prints: one table row per plan
// with model states split into parts, buffers, activations, totals and communication; the
// verdict; DeepSpeed's own tables; and with `explain` the arithmetic behind every number.

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "estimator/estimate.hpp"

namespace shardscope::estimator {

/// The estimate as one JSON document.
nlohmann::json estimate_to_json(const Estimate& estimate);

/// A time as the text table prints communication per step: "52.4 ms", "1.25 s"; "?" when unknown.
std::string format_seconds(const std::optional<double>& seconds);

/// The text table's fit column: "yes", "no (GPU)", "no (CPU)", or "-" when no GPU memory was given.
std::string plan_fit_text(const PlanEstimate& plan);

/// The estimate as text; `explain` adds the formula behind each number.
std::string format_estimate_text(const Estimate& estimate, bool explain);

}  // namespace shardscope::estimator
