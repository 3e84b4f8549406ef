// The importers' one way to read an outside file (sessions/import/file_bytes.hpp): refused by type
// before a byte is read (a FIFO named as a DeepSpeed log would block an import forever), bounded
// by the file's own size and the caller's cap, and a growing file read in pieces.
#include "sessions/import/file_bytes.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/input_file.hpp"
#include "sessions/import/deepspeed_import.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

namespace fs = std::filesystem;

std::string import_message(const std::string& path, std::size_t cap) {
  try {
    read_file_bytes(path, cap);
  } catch (const ImportError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ImportFileBytes, AFifoIsRefusedByItsTypeAtOnce) {
  const std::string fifo = testing::temp_path("import_fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = import_message(fifo, kMaxTextFileBytes);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_NE(message.find(fifo), std::string::npos) << message;
  EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
  EXPECT_THROW(read_file_from(fifo, 0, 16), ImportError);
  fs::remove(fifo);
}

TEST(ImportFileBytes, FoldersAndDevicesAreRefusedNamingThePath) {
  const std::string folder = testing::temp_path("import_folder");
  fs::create_directories(folder);
  EXPECT_NE(import_message(folder, kMaxTextFileBytes).find("directory"), std::string::npos);
  EXPECT_NE(import_message("/dev/zero", kMaxTextFileBytes).find("character device"), std::string::npos);
  fs::remove(folder);
}

TEST(ImportFileBytes, AFileAboveTheCapIsRefusedWithItsSize) {
  const std::string path = testing::temp_path("import_cap");
  std::ofstream(path) << std::string(100, 'x');
  EXPECT_EQ(read_file_bytes(path, 100), std::string(100, 'x'));
  const std::string message = import_message(path, 99);
  EXPECT_NE(message.find("100 bytes, more than the 99"), std::string::npos) << message;
  fs::remove(path);
}

TEST(ImportFileBytes, AGrowingFileIsReadFromAnOffsetUpToItsEnd) {
  const std::string path = testing::temp_path("import_growing");
  std::ofstream(path) << "step,loss\n1,4.5\n";
  EXPECT_EQ(read_file_from(path, 10, 100), "1,4.5\n");
  std::ofstream(path, std::ios::app) << "2,4.1\n";
  EXPECT_EQ(read_file_from(path, 16, 3), "2,4");
  EXPECT_EQ(read_file_from(path, 22, 100), "");
  fs::remove(path);
}

TEST(ImportFileBytes, AnImportsConfigHasTheConfigsCap) {
  const auto config = testing::temp_path("import_big_config") + ".json";
  std::ofstream(config) << "{\"train_batch_size\": 16}";
  fs::resize_file(config, configs::kMaxConfigFileBytes + 1);  // sparse
  const auto db = testing::temp_path("import_big_config_db");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.config_file = config;
  try {
    import_deepspeed_run(store, sources);
    FAIL() << "a config above 16 MiB was imported";
  } catch (const ImportError& error) {
    EXPECT_NE(std::string(error.what()).find(config + ": "), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("JSON config file may hold (16.7 MB"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(list_sessions(store).empty());
  fs::remove(config);
  testing::remove_store(db);
}

TEST(ImportFileBytes, AnImportOfAFifoLogFailsNamingIt) {
  const std::string fifo = testing::temp_path("import_fifo_log");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto db = testing::temp_path("import_fifo_db");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.log_files = {fifo};
  try {
    import_deepspeed_run(store, sources);
    FAIL() << "a FIFO log was imported";
  } catch (const ImportError& error) {
    EXPECT_NE(std::string(error.what()).find(fifo), std::string::npos) << error.what();
  }
  EXPECT_TRUE(list_sessions(store).empty());
  fs::remove(fifo);
  testing::remove_store(db);
}

// Issue 31: random bytes given as --log made a session of garbage log lines.
TEST(ImportFileBytes, ALogOfRandomBytesIsRefusedAsNotText) {
  const std::string log = testing::temp_path("import_random_log");
  std::string bytes;
  std::uint32_t x = 2463534242u;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;  // xorshift32: bytes with no NUL bias
    bytes.push_back(static_cast<char>((x & 0xFF) | 0x80));  // high bytes only: no NUL, mostly not UTF-8
  }
  testing::write_bytes(log, bytes);
  const auto db = testing::temp_path("import_random_db");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.log_files = {log};
  try {
    import_deepspeed_run(store, sources);
    FAIL() << "random bytes were imported as a log";
  } catch (const ImportError& error) {
    EXPECT_NE(std::string(error.what()).find(log + ": not a text log"), std::string::npos) << error.what();
  }
  testing::write_bytes(log, std::string("[INFO] fine\n\0binary", 20));
  EXPECT_THROW(import_deepspeed_run(store, sources), ImportError);
  testing::write_bytes(log, "\x1b[32m[2026-01-01 10:00:00,000] [INFO] colours and \r progress\n");
  EXPECT_NO_THROW(import_deepspeed_run(store, sources)) << "colour escapes and carriage returns are text";
  EXPECT_EQ(list_sessions(store).size(), 1u);
  fs::remove(log);
  testing::remove_store(db);
}

// Issue 31: a 2 GB file given as a trace or an event file was read whole before its first byte was
// looked at. A sparse file costs no disk; refused in its first bytes it costs no time either.
TEST(ImportFileBytes, ATwoGigabyteFileThatIsNoTraceIsRefusedBeforeItIsRead) {
  const std::string folder = testing::temp_path("import_big_tb");
  fs::create_directories(folder);
  const std::string events = folder + "/events.out.tfevents.1.host.1.0";
  const std::string trace = testing::temp_path("import_big_trace") + ".json";
  for (const auto& path : {events, trace}) {
    std::ofstream(path) << "AAAAAAAAAAAAAAAA";
    ASSERT_EQ(::truncate(path.c_str(), off_t{2} << 30), 0);
  }
  const auto db = testing::temp_path("import_big_db");
  Store store = Store::open_or_create(db);
  for (int which = 0; which < 2; ++which) {
    DeepSpeedImportSources sources;
    if (which == 0) sources.tensorboard_dir = folder;
    else sources.traces = {TraceFile{0, trace}};
    const auto start = std::chrono::steady_clock::now();
    try {
      import_deepspeed_run(store, sources);
      ADD_FAILURE() << "imported " << (which == 0 ? events : trace);
    } catch (const ImportError& error) {
      EXPECT_NE(std::string(error.what()).find(which == 0 ? events : trace), std::string::npos) << error.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500)) << which;
  }
  fs::remove_all(folder);
  fs::remove(trace);
  testing::remove_store(db);
}

}  // namespace
}  // namespace shardscope::sessions
