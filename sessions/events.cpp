#include "sessions/events.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "sessions/errors.hpp"

namespace shardscope::sessions {

std::size_t event_record_count(const Event& event) {
  if (const auto* a = std::get_if<ActivityBatch>(&event)) return a->records.size();
  if (const auto* n = std::get_if<NvtxBatch>(&event)) return n->ranges.size();
  if (const auto* t = std::get_if<TimerBreakdown>(&event)) return t->timers.size();
  return 1;
}

std::string compute_config_hash(const std::string& config_json) {
  std::string canonical;
  try {
    canonical = nlohmann::json::parse(config_json).dump();  // objects are key-sorted std::maps
  } catch (const nlohmann::json::exception& error) {
    throw SessionsError(ErrorKind::kInvalidArgument, std::string("config is not valid JSON: ") + error.what());
  }
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : canonical) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

LogLevel log_level_from_name(const std::string& name) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError})
    if (name == log_level_name(level)) return level;
  throw SessionsError(ErrorKind::kInvalidArgument,
                      "unknown log level '" + name + "' (expected debug, info, warning or error)");
}

const char* activity_kind_name(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kKernel: return "kernel";
    case ActivityKind::kMemcpy: return "memcpy";
    case ActivityKind::kMemset: return "memset";
  }
  return "kernel";
}

}  // namespace shardscope::sessions
