// libFuzzer entry point: bytes as DeepSpeed console output, fed to the log parser line by line,
// and to the Hugging Face Trainer's reader of the same output (its log dicts, the tqdm bars), as
// `sessions import --log` and `watch` read it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sessions/import/deepspeed_log_parser.hpp"
#include "sessions/import/trainer_log.hpp"

namespace {

void read_as_trainer_output(std::string_view text) {
  shardscope::sessions::TrainerOutputReader reader;
  for (std::size_t at = 0; at <= text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    reader.feed_line(text.substr(at, end - at));
    at = end + 1;
  }
  reader.finish();
  const auto records = reader.take_records();
  if (records.size() > text.size() / 2 + 1) __builtin_trap();  // a dict takes at least "{'':0}"
  for (const auto& r : records)
    if (r.step < 0) __builtin_trap();  // every record completed has a step
  shardscope::sessions::trainer_records_to_events(records);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  shardscope::sessions::DeepSpeedLogParser parser("fuzz.log", -1);
  parser.feed_text(text);
  parser.finish();
  const auto events = parser.take_events();
  if (events.size() > 2 * size + 2) __builtin_trap();  // a log line and a next-step rate per line at most
  read_as_trainer_output(text);
  return 0;
}
