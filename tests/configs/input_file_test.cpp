// The checked open every reader of a user-given file goes through: regular files only, refused
// by type (directory, FIFO, character device) before a byte is read, and whole-file reads capped.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "configs/config_document.hpp"
#include "configs/input_file.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::configs {
namespace {

std::string error_of(const std::string& path, std::uint64_t cap = kMaxConfigFileBytes) {
  try {
    read_input_file(path, "config file", cap);
  } catch (const InputFileError& e) {
    return e.what();
  }
  return "";
}

TEST(InputFile, ReadsARegularFileWhole) {
  test::TempDir dir;
  std::ofstream(dir.file("a.json")) << "{\"x\": 1}";
  EXPECT_EQ(read_input_file(dir.file("a.json"), "config file", 100), "{\"x\": 1}");
}

TEST(InputFile, RefusesADirectoryByType) {
  test::TempDir dir;
  EXPECT_EQ(error_of(dir.file("")), dir.file("") + ": is a directory, not a config file; give the path of a regular file");
}

TEST(InputFile, RefusesAFifoWithoutBlocking) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("pipe").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of(dir.file("pipe")).find("is a FIFO (named pipe), not a config file"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(InputFile, RefusesDevZeroInsteadOfReadingForever) {
  EXPECT_EQ(error_of("/dev/zero"), "/dev/zero: is a character device, not a config file; give the path of a regular file");
}

TEST(InputFile, NamesAMissingFile) {
  EXPECT_EQ(error_of("/nonexistent/ds.json"), "/nonexistent/ds.json: no such file (check the path of the config file)");
}

TEST(InputFile, RefusesAFileAboveItsCapBeforeReadingIt) {
  test::TempDir dir;
  std::ofstream(dir.file("big.json")) << std::string(2000, ' ');
  EXPECT_EQ(error_of(dir.file("big.json"), 1000),
            dir.file("big.json") + ": 2000 bytes is more than a config file may hold (1000 bytes, "
                                   "docs/reliability.md); is this the right file?");
}

TEST(InputFile, ReadAtStopsAtTheEndWithAMessage) {
  test::TempDir dir;
  std::ofstream(dir.file("short.bin")) << "12345";
  const InputFile file(dir.file("short.bin"), "safetensors file");
  EXPECT_EQ(file.size(), 5u);
  EXPECT_EQ(file.read_at(1, 3), "234");
  EXPECT_THROW(file.read_at(2, 10), InputFileError);
}

TEST(InputFile, ConfigFilesAreReadThroughIt) {
  try {
    parse_config_file("/dev/zero");
    FAIL() << "/dev/zero was read as a config";
  } catch (const ConfigFileError& e) {
    EXPECT_NE(std::string(e.what()).find("is a character device, not a JSON config file"), std::string::npos);
  }
}

}  // namespace
}  // namespace shardscope::configs
