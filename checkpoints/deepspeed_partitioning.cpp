#include "checkpoints/deepspeed_partitioning.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <regex>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/host_tensor.hpp"

namespace shardscope::checkpoints {

std::string model_states_file_name(int zero_stage, int dp_rank) {
  if (zero_stage == 3) return "zero_pp_rank_" + std::to_string(dp_rank) + "_mp_rank_00_model_states.pt";
  return "mp_rank_00_model_states.pt";
}

std::string optim_states_file_name(bool bf16, int dp_rank) {
  return std::string(bf16 ? "bf16_" : "") + "zero_pp_rank_" + std::to_string(dp_rank) + "_mp_rank_00_optim_states.pt";
}

std::string default_checkpoint_tag(std::int64_t global_steps) { return "global_step" + std::to_string(global_steps); }

std::optional<CheckpointFileName> parse_checkpoint_file_name(const std::string& name) {
  static const std::regex optim(R"((bf16_)?zero_pp_rank_(\d{1,7})_mp_rank_\d\d_optim_states\.pt)");
  static const std::regex zero_model(R"(zero_pp_rank_(\d{1,7})_mp_rank_\d\d_model_states\.pt)");
  static const std::regex model(R"(mp_rank_\d\d_model_states\.pt)");
  std::smatch m;
  CheckpointFileName f;
  if (std::regex_match(name, m, optim)) {
    f.kind = CheckpointFileName::Kind::kOptimStates;
    f.bf16 = m[1].matched;
    f.dp_rank = std::stoi(m[2].str());
    return f;
  }
  if (std::regex_match(name, m, zero_model)) {
    f.kind = CheckpointFileName::Kind::kZeroModelStates;
    f.dp_rank = std::stoi(m[1].str());
    return f;
  }
  if (std::regex_match(name, model)) return f;
  return std::nullopt;
}

std::int64_t Zero12Group::flat_numel(const std::vector<ParameterEntry>& parameters) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < params.size(); ++i)
    n += parameters[static_cast<std::size_t>(params[i])].numel + (alignment_paddings.empty() ? 0 : alignment_paddings[i]);
  return n;
}

std::int64_t zero12_partition_numel(std::int64_t flat_numel, int world_size) {
  const std::int64_t align = 2 * static_cast<std::int64_t>(world_size);
  return (flat_numel + align - 1) / align * align / world_size;
}

std::int64_t zero12_group_padding(std::int64_t flat_numel, int world_size, int rank) {
  if (rank != world_size - 1) return 0;
  return zero12_partition_numel(flat_numel, world_size) * world_size - flat_numel;
}

std::vector<PartitionRun> zero12_runs(const std::vector<ParameterEntry>& parameters, const Zero12Group& group,
                                      int world_size, int rank, std::int64_t part_base, std::int64_t length) {
  const std::int64_t partition = zero12_partition_numel(group.flat_numel(parameters), world_size);
  const std::int64_t begin = partition * rank, end = begin + std::min(length, partition);
  std::vector<PartitionRun> runs;
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < group.params.size(); ++i) {
    const ParameterEntry& p = parameters[static_cast<std::size_t>(group.params[i])];
    const std::int64_t lo = std::max(flat, begin), hi = std::min(flat + p.numel, end);
    if (lo < hi) runs.push_back({p.offset + (lo - flat), part_base + (lo - begin), hi - lo});
    flat += p.numel + (group.alignment_paddings.empty() ? 0 : group.alignment_paddings[i]);
  }
  return runs;
}

std::int64_t zero3_partition_numel(std::int64_t numel, int world_size) {
  return (numel + world_size - 1) / world_size;
}

std::vector<PartitionRun> zero3_runs(const std::vector<ParameterEntry>& parameters, int world_size, int rank) {
  std::vector<PartitionRun> runs;
  std::int64_t part = 0;
  for (const auto& p : parameters) {
    const std::int64_t chunk = zero3_partition_numel(p.numel, world_size);
    const std::int64_t lo = std::min(p.numel, chunk * rank), hi = std::min(p.numel, chunk * (rank + 1));
    if (lo < hi) runs.push_back({p.offset + lo, part, hi - lo});
    part += chunk;
  }
  return runs;
}

std::vector<std::pair<int, int>> zero3_sub_groups(const std::vector<ParameterEntry>& parameters, int world_size,
                                                  std::int64_t sub_group_size) {
  std::vector<std::pair<int, int>> groups;
  const auto n = static_cast<int>(parameters.size());
  std::int64_t total = 0;
  for (const auto& p : parameters) total += zero3_partition_numel(p.numel, world_size);
  // stage3.py: a group size at or above the whole group's numel keeps one sub-group.
  if (n == 0) return groups;
  if (sub_group_size <= 0 || sub_group_size >= total) return {{0, n}};
  std::int64_t local = 0;
  int begin = 0;
  for (int i = 0; i < n; ++i) {
    local += zero3_partition_numel(parameters[static_cast<std::size_t>(i)].numel, world_size);
    if (local >= sub_group_size || i == n - 1) {
      groups.emplace_back(begin, i + 1);
      begin = i + 1;
      local = 0;
    }
  }
  return groups;
}

std::int64_t assign_offsets(std::vector<ParameterEntry>& parameters, const std::string& file) {
  std::int64_t total = 0;
  for (auto& p : parameters) {
    const auto n = checked_numel(p.shape);
    if (!n) throw damaged(file, "parameter '" + p.name + "' has a shape whose size is negative or overflows");
    if (*n > std::numeric_limits<std::int64_t>::max() - total)
      throw damaged(file, "the parameters' sizes add up past 2^63 elements");
    p.numel = *n;
    p.offset = total;
    total += *n;
  }
  return total;
}

}  // namespace shardscope::checkpoints
