#include "configs/resolved_json.hpp"

#include <nlohmann/json.hpp>

namespace shardscope::configs {

std::string resolved_config_json(const std::vector<ResolvedValue>& resolved) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  for (const auto& value : resolved) {
    nlohmann::ordered_json* node = &root;
    std::size_t start = 0;
    for (std::size_t dot; (dot = value.path.find('.', start)) != std::string::npos; start = dot + 1) {
      const std::string key = value.path.substr(start, dot - start);
      nlohmann::ordered_json& child = (*node)[key];
      if (!child.is_object()) child = nlohmann::ordered_json::object();  // a block given as a scalar
      node = &child;
    }
    const auto parsed = nlohmann::ordered_json::parse(value.value_json, nullptr, /*allow_exceptions=*/false);
    (*node)[value.path.substr(start)] = parsed.is_discarded() ? nlohmann::ordered_json(value.value_json) : parsed;
  }
  return root.dump();
}

}  // namespace shardscope::configs
