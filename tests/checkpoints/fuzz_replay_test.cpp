// Every seed of the checkpoint reader's fuzz target (fuzz/corpus: checkpoints DeepSpeed and
// ShardScope wrote) and every input that once made it fail (fuzz/regressions) goes through the
// target's entry point: it must return without a crash, a sanitizer report or a non-checkpoint
// exception, and the seeds must be real checkpoints the reader accepts.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "checkpoints/torch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace shardscope::checkpoints {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_under(const std::string& folder) {
  std::vector<fs::path> out;
  if (!fs::is_directory(folder)) return out;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0) << path;
}

TEST(CheckpointFuzzReplay, SeedsAreCheckpointsTheReaderAccepts) {
  const auto seeds = files_under(std::string(SHARDSCOPE_FUZZ_DIR) + "/corpus");
  ASSERT_GE(seeds.size(), 8u) << "the seed corpus is missing";
  for (const auto& seed : seeds) {
    EXPECT_NO_THROW(TorchFile{seed.string()}) << seed;
    replay(seed);
  }
}

TEST(CheckpointFuzzReplay, EveryFormerCrashIsHandled) {
  for (const auto& input : files_under(std::string(SHARDSCOPE_FUZZ_DIR) + "/regressions")) replay(input);
}

}  // namespace
}  // namespace shardscope::checkpoints
