// libFuzzer target: opening a session file and reading it as `shardscope sessions list|show|
// compare|export` do. The input is the file's bytes (an SQLite database, damaged or hostile).
// Bad input must raise SessionsError, nothing else: no crash, no raw JSON or SQL exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "sessions/errors.hpp"
#include "sessions/session_compare.hpp"
#include "sessions/session_export.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/store.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace shardscope::sessions;

// SQLite opens by path and adds -wal and -shm files beside it, so a real folder of our own.
const std::string& store_path() {
  static const std::string path = [] {
    char folder[] = "/tmp/shardscope-fuzz-session-XXXXXX";
    if (!::mkdtemp(folder)) shardscope::fuzz::fail("mkdtemp");
    return std::string(folder) + "/fuzz.db";
  }();
  return path;
}

void write_store(const std::uint8_t* data, std::size_t size) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((store_path() + suffix).c_str());
  std::FILE* f = std::fopen(store_path().c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) shardscope::fuzz::fail("write");
}

void read_everything(Store& store) {
  const auto sessions = list_sessions(store);
  std::vector<std::int64_t> ids;
  for (const auto& s : sessions) {
    ids.push_back(s.id);
    (void)load_session(store, s.id);
    (void)summarize_session(store, s.id);
  }
  if (ids.size() >= 2) (void)compare_sessions(store, {ids[0], ids[1]}, CompareOptions{});
  std::ostringstream json;
  export_json(store, ids, json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_store(data, size);
  // Writable, as the CLI opens it (upgrades, marks abandoned sessions), with damage a warning.
  StoreOpenOptions options;
  options.integrity = IntegrityCheck::kWarn;
  options.busy_timeout_ms = 0;
  try {
    Store store = Store::open(store_path(), options);
    read_everything(store);
  } catch (const SessionsError&) {
  }
  return 0;
}
