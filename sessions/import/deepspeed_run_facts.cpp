#include "sessions/import/deepspeed_run_facts.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "configs/resolved_json.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {

RecordedConfig record_deepspeed_config(const std::string& text, const std::string& file,
                                       std::optional<int> world_size, std::vector<std::string>& notes,
                                       configs::DeepSpeedVersion version) {
  const configs::ConfigDocument document = configs::parse_config_text(text, file);
  if (!document.root)
    throw ImportError(file + ": not a DeepSpeed config (it does not parse as JSON/hjson); pass the run's "
                      "ds_config.json");
  configs::ValidateOptions options;
  options.world_size = world_size;
  options.own_optimizer = true;  // a run that ran had an optimizer, from the config or the script
  options.deepspeed_version = version;
  const configs::ValidationResult result = configs::validate(document, options);
  RecordedConfig out;
  const auto raw = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const bool batch_written = !raw.is_discarded() && raw.contains("train_batch_size") &&
                             raw["train_batch_size"].is_number_integer();
  if (result.config && !result.has_errors()) {
    out.json = configs::resolved_config_json(result.resolved);
    const auto resolved = nlohmann::json::parse(out.json);
    // Solved from the micro batch, the batch size is only right for the run's world size.
    if ((batch_written || world_size) && resolved.contains("train_batch_size") &&
        resolved["train_batch_size"].is_number_integer())
      out.train_batch_size = resolved["train_batch_size"].get<std::int64_t>();
    return out;
  }
  // DeepSpeed ran it, so keep what it said; the errors are ShardScope's reading (e.g. "auto" left).
  notes.push_back(file + ": the config does not validate here (" +
                  std::to_string(configs::count_severity(result.diagnostics, configs::Severity::kError)) +
                  " errors under DeepSpeed " + configs::to_string(version) + "'s rules; `shardscope validate " + file +
                  " --deepspeed-version " + configs::to_string(version) +
                  "` lists them), so the session records it as written");
  out.json = raw.is_discarded() ? "" : raw.dump();
  if (batch_written) out.train_batch_size = raw["train_batch_size"].get<std::int64_t>();
  return out;
}

RunStart deepspeed_run_start(const DeepSpeedLogFacts& facts, const RunStartInputs& inputs) {
  RunStart start;
  start.name = inputs.name;
  start.tags = inputs.tags;
  start.started_at = facts.first_time.value_or(inputs.started_at.value_or(0));
  start.command_line = inputs.command_line.empty() ? facts.command : inputs.command_line;
  start.config_json = inputs.config_json;
  start.environment.versions.deepspeed = facts.deepspeed_version;
  start.environment.accelerator.backend = facts.accelerator;
  if (!facts.accelerator.empty() || !facts.backend.empty())
    start.environment.accelerator.note = "DeepSpeed accelerator " + (facts.accelerator.empty() ? "?" : facts.accelerator) +
                                         ", communication backend " + (facts.backend.empty() ? "?" : facts.backend);
  start.ranks = facts.ranks;
  std::sort(start.ranks.begin(), start.ranks.end(), [](const RankInfo& a, const RankInfo& b) { return a.rank < b.rank; });
  for (auto& r : start.ranks)
    if (r.device.empty() && !facts.accelerator.empty())
      r.device = facts.accelerator == "cpu" ? "cpu" : facts.accelerator + ":" + std::to_string(r.local_rank);
  if (!inputs.local_host.empty())
    for (auto& r : start.ranks)
      if (r.host == "localhost" || r.host == "127.0.0.1" || r.host == "::1") r.host = inputs.local_host;
  std::set<std::string> hosts(inputs.hosts.begin(), inputs.hosts.end());
  for (const auto& r : start.ranks)
    if (!r.host.empty()) hosts.insert(r.host);
  if (hosts.size() == 1) start.environment.host.hostname = *hosts.begin();
  start.world_size = facts.world_size.value_or(inputs.world_size.value_or(static_cast<int>(start.ranks.size())));
  return start;
}

RunEnd deepspeed_run_end(const DeepSpeedLogFacts& facts, const std::string& unknown_status) {
  RunEnd end;
  end.ended_at = facts.last_time.value_or(0);
  if (facts.first_time && facts.last_time) end.wall_time_s = *facts.last_time - *facts.first_time;
  bool failed = false;
  for (const auto& [rank, code] : facts.exit_codes) {
    end.exit_codes.push_back({rank, code});
    failed = failed || code != 0;
  }
  const bool all_exited = !facts.exit_codes.empty() &&
                          (!facts.world_size || static_cast<int>(facts.exit_codes.size()) >= *facts.world_size);
  end.status = failed ? "failed" : all_exited ? "completed" : unknown_status;
  return end;
}

}  // namespace shardscope::sessions
