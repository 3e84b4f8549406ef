// plan_candidates: grid points -> candidates DeepSpeed would run -> the estimator's verdict.
#include <algorithm>
#include <map>

#include "tune/candidate_config.hpp"
#include "tune/tune_error.hpp"
#include "tune/tune_run.hpp"

namespace shardscope::tune {
namespace {

std::int64_t value_of(const Assignment& a, const std::string& key, std::int64_t fallback) {
  for (const auto& [k, v] : a)
    if (k == key && v.is_number_integer()) return v.get<std::int64_t>();
  return fallback;
}

// The assignment without micro-batch and accumulation: candidates sharing it differ only in batch.
std::string batch_free_key(const Assignment& a) {
  Assignment rest;
  for (const auto& kv : a)
    if (kv.first != kMicroBatchKey && kv.first != kAccumulationKey) rest.push_back(kv);
  return assignment_key(rest);
}

// autotuning.num_tuning_micro_batch_sizes: of the micro-batches that fit, the largest N of each
// plan are tried (the edge the estimator found, confirmed by trials); the rest are recorded.
void keep_largest_micro_batches(std::vector<TuneCandidate>& candidates, std::int64_t keep) {
  std::map<std::string, std::vector<std::int64_t>> fitting;
  for (const auto& c : candidates)
    if (c.prune_reason.empty()) fitting[batch_free_key(c.assignment)].push_back(value_of(c.assignment, kMicroBatchKey, 0));
  for (auto& [key, sizes] : fitting) std::sort(sizes.rbegin(), sizes.rend());
  for (auto& c : candidates) {
    if (!c.prune_reason.empty()) continue;
    const auto& sizes = fitting[batch_free_key(c.assignment)];
    if (static_cast<std::int64_t>(sizes.size()) <= keep) continue;
    const std::int64_t cut = sizes[static_cast<std::size_t>(keep - 1)];
    if (value_of(c.assignment, kMicroBatchKey, 0) < cut)
      c.prune_reason = "fits, but " + std::to_string(keep) + " larger micro-batches of the same plan fit too "
                       "(autotuning.num_tuning_micro_batch_sizes " + std::to_string(keep) + ")";
  }
}

std::string batch_limit_refusal(const TuneRequest& r, const configs::ResolvedConfig& config) {
  const std::int64_t tb = config.batch.train_batch_size;
  if (r.max_train_batch_size && tb > *r.max_train_batch_size)
    return "train_batch_size " + std::to_string(tb) + " is above autotuning.max_train_batch_size " +
           std::to_string(*r.max_train_batch_size);
  if (tb < r.min_train_batch_size)
    return "train_batch_size " + std::to_string(tb) + " is below autotuning.min_train_batch_size " +
           std::to_string(r.min_train_batch_size);
  return "";
}

}  // namespace

TuneMetric parse_tune_metric(const std::string& text, const std::string& what) {
  if (text == "tokens_per_s") return TuneMetric::kTokensPerS;
  if (text == "samples_per_s") return TuneMetric::kSamplesPerS;
  if (text == "step_time") return TuneMetric::kStepTime;
  throw TuneError(what + " '" + text + "' is not a metric: use tokens_per_s, samples_per_s or step_time");
}

const char* tune_metric_name(TuneMetric metric) {
  switch (metric) {
    case TuneMetric::kTokensPerS: return "tokens_per_s";
    case TuneMetric::kSamplesPerS: return "samples_per_s";
    case TuneMetric::kStepTime: return "step_time";
  }
  return "?";
}

std::vector<TuneCandidate> plan_candidates(const TuneRequest& r, std::vector<std::string>& left_out,
                                           std::size_t& grid_points) {
  const SearchSpace space = default_search_space(r.user_config, r.world_size, r.space_options, r.space_flags);
  grid_points = grid_size(space);
  std::map<std::string, int> refusals;
  std::vector<TuneCandidate> out;
  for (auto& a : enumerate_assignments(space)) {
    TuneCandidate c{a, candidate_config(r.user_config, a), 0, ""};
    const CandidateCheck check = check_candidate(c.config, r.world_size);
    if (check.duplicate) continue;  // offload_param below stage 3: DeepSpeed ignores it, the same run again
    std::string refusal = check.config ? batch_limit_refusal(r, *check.config) : check.refusal;
    if (!refusal.empty()) {
      ++refusals[refusal];
      continue;
    }
    try {
      const PruneDecision d = judge_memory(*check.config, r.model, r.world_size, r.memory);
      c.predicted_bytes = d.predicted_bytes;
      c.prune_reason = d.reason;
    } catch (const std::exception& e) {  // nothing the estimator cannot judge is launched blind
      c.prune_reason = std::string("the estimator cannot predict it: ") + e.what();
    }
    out.push_back(std::move(c));
  }
  if (r.micro_batch_from_default && r.num_tuning_micro_batch_sizes > 0) keep_largest_micro_batches(out, r.num_tuning_micro_batch_sizes);
  for (const auto& [reason, count] : refusals) left_out.push_back(std::to_string(count) + " x " + reason);
  if (out.empty())
    throw TuneError("the space has no candidate DeepSpeed would run (" + std::to_string(grid_points) +
                    " grid points; " + (left_out.empty() ? std::string("all duplicates") : left_out.front()) +
                    "): widen --space or fix the config");
  return out;
}

}  // namespace shardscope::tune
