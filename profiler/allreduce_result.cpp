#include "profiler/allreduce_result.hpp"

#include <nlohmann/json.hpp>

namespace shardscope::profiler {

using nlohmann::json;

json allreduce_to_json(const AllReduceResult& r) {
  return {{"world_size", r.world_size}, {"backend", r.backend},       {"bytes", r.bytes},
          {"iterations", r.iterations}, {"mean_ms", r.mean_ms},       {"algbw_gbps", r.algbw_gbps},
          {"busbw_gbps", r.busbw_gbps}, {"correct", r.correct}};
}

std::optional<AllReduceResult> allreduce_from_line(const std::string& line) {
  const auto at = line.find(kAllReduceMarker);
  if (at == std::string::npos) return std::nullopt;
  const auto j = json::parse(line.substr(at + std::string(kAllReduceMarker).size()), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    return AllReduceResult{j.at("world_size").get<int>(),    j.at("backend").get<std::string>(),
                           j.at("bytes").get<std::int64_t>(), j.at("iterations").get<int>(),
                           j.at("mean_ms").get<double>(),     j.at("algbw_gbps").get<double>(),
                           j.at("busbw_gbps").get<double>(),  j.at("correct").get<bool>()};
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace shardscope::profiler
