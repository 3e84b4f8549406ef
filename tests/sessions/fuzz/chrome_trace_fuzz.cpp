// libFuzzer entry point: bytes as a PyTorch profiler Chrome trace (JSON, SAX-parsed).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sessions/import/chrome_trace.hpp"
#include "sessions/import/import_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    shardscope::sessions::parse_chrome_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const shardscope::sessions::ImportError&) {
  }
  return 0;
}
