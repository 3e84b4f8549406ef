#include "tune/search_space.hpp"

#include <algorithm>

#include "tune/tune_error.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

json parse_space_value(const std::string& text) {
  if (text == "none" || text == "null" || text == "default") return nullptr;
  // JSON when it parses ("4", "5e8", "true", "\"cpu\""), else the bare word as a string ("cpu").
  const json parsed = json::parse(text, nullptr, false);
  return parsed.is_discarded() ? json(text) : parsed;
}

const json* find_dotted(const json& config, const std::string& key) {
  const json* node = &config;
  std::size_t start = 0;
  while (start <= key.size()) {
    const auto dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
  return nullptr;
}

bool has_nvme_path(const json& config, const std::string& block) {
  const json* path = find_dotted(config, "zero_optimization." + block + ".nvme_path");
  return path && path->is_string() && !path->get<std::string>().empty();
}

std::vector<json> offload_values(const json& config, const std::string& block) {
  std::vector<json> values{nullptr, "cpu"};
  if (has_nvme_path(config, block)) values.push_back("nvme");
  return values;
}

std::vector<json> micro_batch_values(const DefaultSpaceOptions& o, std::optional<std::int64_t> global_batch, int world) {
  std::int64_t top = o.max_micro_batch;
  if (global_batch) top = std::min<std::int64_t>(top, *global_batch / std::max(world, 1));
  std::vector<json> values;
  for (std::int64_t mb = 1; mb <= top; mb *= 2)
    if (mb >= o.min_micro_batch) values.push_back(mb);
  if (values.empty()) values.push_back(std::max<std::int64_t>(o.min_micro_batch, 1));
  return values;
}

std::optional<std::int64_t> global_batch_of(const json& config) {
  const auto it = config.find("train_batch_size");
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;  // absent or "auto"
  return it->get<std::int64_t>();
}

}  // namespace

Dimension parse_space_flag(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    throw TuneError("--space '" + text + "' has no '=': give KEY=V1,V2,..., e.g. --space zero_optimization.stage=1,2,3");
  Dimension d;
  d.key = trim(text.substr(0, eq));
  d.origin = "--space";
  if (d.key.empty()) throw TuneError("--space '" + text + "' has no key before '=' (a dotted ds_config key)");
  std::string rest = text.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string item = trim(rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!item.empty()) d.values.push_back(parse_space_value(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (d.values.empty()) throw TuneError("--space " + d.key + "= has no values: give one or more, comma-separated");
  return d;
}

SearchSpace default_search_space(const json& user_config, int world_size, const DefaultSpaceOptions& options,
                                 const std::vector<Dimension>& given) {
  SearchSpace space;
  space.world_size = world_size;
  space.global_batch = global_batch_of(user_config);
  std::vector<Dimension> defaults = {
      {"zero_optimization.stage", {0, 1, 2, 3}, "default"},
      {kMicroBatchKey, micro_batch_values(options, space.global_batch, world_size), "default"},
      {kCheckpointingKey, {false, true}, "default"},
      {"zero_optimization.offload_optimizer.device", offload_values(user_config, "offload_optimizer"), "default"},
      {"zero_optimization.offload_param.device", offload_values(user_config, "offload_param"), "default"},
  };
  if (!options.fast) {  // DeepSpeed's non-fast mode tunes the buckets of its per-stage spaces too
    defaults.push_back({"zero_optimization.reduce_bucket_size", {5e7, 5e8, 1e9}, "default"});
    defaults.push_back({"zero_optimization.allgather_bucket_size", {5e7, 5e8, 1e9}, "default"});
    defaults.push_back({"zero_optimization.stage3_prefetch_bucket_size", {5e6, 5e7}, "default"});
    defaults.push_back({"zero_optimization.stage3_param_persistence_threshold", {1e4, 1e5}, "default"});
  }
  for (auto& d : defaults) {
    const bool replaced = std::any_of(given.begin(), given.end(), [&](const Dimension& g) { return g.key == d.key; });
    if (!replaced) space.dimensions.push_back(std::move(d));
  }
  for (const auto& g : given) {
    if (g.key == kAccumulationKey && space.global_batch)
      throw TuneError("--space gradient_accumulation_steps: the config fixes train_batch_size " +
                      std::to_string(*space.global_batch) + ", so the micro-batch decides it; tune " +
                      std::string(kMicroBatchKey) + " instead, or drop train_batch_size from the file");
    space.dimensions.push_back(g);
  }
  return space;
}

std::size_t grid_size(const SearchSpace& space) {
  std::size_t n = 1;
  for (const auto& d : space.dimensions) n *= d.values.size();
  return n;
}

std::vector<Assignment> enumerate_assignments(const SearchSpace& space) {
  std::vector<Assignment> out;
  const std::size_t total = grid_size(space);
  for (std::size_t index = 0; index < total; ++index) {
    Assignment a;
    std::size_t rest = index;
    // Mixed-radix digits, last dimension fastest: grid order reads like nested loops.
    std::vector<std::size_t> digits(space.dimensions.size());
    for (std::size_t k = space.dimensions.size(); k-- > 0;) {
      digits[k] = rest % space.dimensions[k].values.size();
      rest /= space.dimensions[k].values.size();
    }
    bool keep = true;
    for (std::size_t k = 0; k < space.dimensions.size(); ++k) {
      const auto& d = space.dimensions[k];
      a.emplace_back(d.key, d.values[digits[k]]);
      if (d.key == kMicroBatchKey && space.global_batch) {
        const std::int64_t mb = d.values[digits[k]].is_number_integer() ? d.values[digits[k]].get<std::int64_t>() : 0;
        const std::int64_t per_step = mb * space.world_size;
        if (per_step <= 0 || *space.global_batch % per_step != 0) keep = false;
        else a.emplace_back(kAccumulationKey, *space.global_batch / per_step);
      }
    }
    if (keep) out.push_back(std::move(a));
  }
  return out;
}

}  // namespace shardscope::tune
