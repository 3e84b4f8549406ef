// libFuzzer entry point: one csv_monitor file's bytes, read whole and as a live file mid-write.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sessions/import/import_error.hpp"
#include "sessions/import/monitor_series.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool complete : {true, false}) {
    try {
      std::size_t consumed = 0;
      const auto series = shardscope::sessions::parse_csv_monitor_text(text, "fuzz.csv", "fuzz", complete, &consumed);
      if (consumed > text.size()) __builtin_trap();
      shardscope::sessions::monitor_series_to_events({series}, {});
    } catch (const shardscope::sessions::ImportError&) {
    }
  }
  return 0;
}
