// libFuzzer entry point: a TensorBoard event file's bytes (TFRecord framing, then each Event),
// with the CRC checks on and, as a second pass, every record's bytes fed to the protobuf decoder
// directly (the CRCs would otherwise keep the fuzzer out of it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sessions/import/import_error.hpp"
#include "sessions/import/tensorboard_events.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::sessions;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    std::size_t consumed = 0;
    for (const auto record : split_tfrecords(bytes, "fuzz", true, &consumed)) decode_tf_event(record, "fuzz", 0);
    if (consumed > size) __builtin_trap();
  } catch (const ImportError&) {
  }
  try {
    decode_tf_event(bytes, "fuzz", 0);
  } catch (const ImportError&) {
  }
  return 0;
}
