// libFuzzer target of the flight recorder's dump reader (diagnosis/flight_record.hpp): one input
// is one rank's dump, pickle or JSON (a first byte '{'). It goes through the allow-list pickle
// reader, the conversion to JSON and the field checks, then, decoded as ranks 0 and 1, through
// the hang diagnosis and its evidence. Anything but an ImportError (a crash, a sanitizer report,
// another exception, a hang) is a finding.
//
// Fuzzing: `scripts/fuzz.sh flight_record_fuzzer [SECONDS]` (target flight_record_fuzzer of
// tests/fuzz/CMakeLists.txt; seeds in corpus/: real gloo dumps of torch 2.11, dictionary
// tests/fuzz/flight_record_fuzzer.dict).
#include <cstddef>
#include <cstdint>
#include <string>

#include "diagnosis/flight_record.hpp"
#include "sessions/import/import_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::diagnosis;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto dump = decode_flight_record(bytes, "fuzz input", 0);
    auto other = dump;
    other.rank = 1;
    if (!other.collectives.empty()) other.collectives.pop_back();  // rank 1 one collective behind
    for (auto& m : other.collectives) m.rank = 1;
    RunPicture run;
    run.now = 2e9;
    diagnose_flight_records({dump, other}, run);
  } catch (const shardscope::sessions::ImportError&) {
  }
  return 0;
}
