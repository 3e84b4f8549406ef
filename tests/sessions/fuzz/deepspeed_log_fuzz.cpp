// libFuzzer entry point: bytes as DeepSpeed console output, fed to the log parser line by line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sessions/import/deepspeed_log_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  shardscope::sessions::DeepSpeedLogParser parser("fuzz.log", -1);
  parser.feed_text(std::string_view(reinterpret_cast<const char*>(data), size));
  parser.finish();
  const auto events = parser.take_events();
  if (events.size() > size + 1) __builtin_trap();  // at most one log line per byte, plus the last
  return 0;
}
