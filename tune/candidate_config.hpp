#pragma once
// A candidate's ds_config: the user's file with exactly the tuned keys changed, its short name (the
// trial's session name), its identity key, and whether DeepSpeed 0.19.7 would run it at all.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "configs/config_model.hpp"
#include "tune/search_space.hpp"

namespace shardscope::tune {

/// Reads the user's ds_config as JSON (comments allowed); throws TuneError naming the file.
nlohmann::json read_user_config(const std::string& path);

/// Sets `key` (dotted) to `value` in `config`, creating objects on the way; null removes the key
/// (and an object left empty by it). The checkpointing pseudo-key writes or removes its block.
void set_dotted(nlohmann::json& config, const std::string& key, const nlohmann::json& value);

/// The user's config with the assignment's keys set (nothing else changes).
nlohmann::json candidate_config(const nlohmann::json& user_config, const Assignment& assignment);

/// A short readable name: "z2 mb4 gas2 ckpt opt=cpu", then any other key as key=value.
std::string assignment_name(const Assignment& assignment);
/// The canonical JSON object of the assignment (sorted keys): the trial's identity in the store.
std::string assignment_key(const Assignment& assignment);
/// The assignment as a JSON object (key -> value), for reports.
nlohmann::json assignment_json(const Assignment& assignment);

/// What the validator made of a candidate: the resolved config, or why DeepSpeed would refuse it.
struct CandidateCheck {
  std::optional<configs::ResolvedConfig> config;
  std::string refusal;  ///< the first error, as the validator words it; empty when it runs
  bool duplicate = false;  ///< runs exactly as another candidate (offload_param below stage 3)
};

/// Validates the candidate for `world_size` ranks with the configs library (DeepSpeed's rules),
/// and refuses what the engine would not run: optimizer offload at stage 0; offload_param below
/// stage 3 is flagged a duplicate, as DeepSpeed ignores it there.
CandidateCheck check_candidate(const nlohmann::json& config, int world_size);

}  // namespace shardscope::tune
