// Data: sharding by rank as DistributedSampler does, resumable positions, synthetic tokens,
// token files (raw uint16/uint32 and llm.c headers) written here, and the regression data.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include <unistd.h>

#include "configs/input_file.hpp"
#include "engine/data/data_error.hpp"
#include "engine/data/data_loader.hpp"
#include "tests/engine/temp_dir.hpp"

namespace se = shardscope::engine;

namespace {

std::vector<std::int64_t> rank_indices(std::int64_t n, int rank, int world, bool shuffle, std::int64_t epoch = 0) {
  se::ShardedSampler sampler({n, rank, world, shuffle, 42});
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < sampler.samples_per_rank(); ++i) out.push_back(sampler.sample(epoch, i));
  return out;
}

template <typename T>
void write_raw(const std::string& path, const std::vector<T>& values, const std::vector<std::int32_t>& header = {}) {
  std::ofstream out(path, std::ios::binary);
  if (!header.empty()) out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size() * 4));
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
}

std::vector<std::int32_t> llmc_header(int version, std::int32_t tokens) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = version;
  header[2] = tokens;
  return header;
}

std::string data_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const se::DataError& e) {
    return e.what();
  } catch (const shardscope::configs::InputFileError& e) {  // missing or not a regular file
    return e.what();
  }
  return "(no error)";
}

class TokenFiles : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.file(name); }
  shardscope::test::TempDir dir_;
};

}  // namespace

TEST(Sampler, RanksTakeDisjointSharesThatCoverTheDataset) {
  for (bool shuffle : {false, true}) {
    std::set<std::int64_t> all;
    for (int rank = 0; rank < 4; ++rank) {
      const auto mine = rank_indices(100, rank, 4, shuffle);
      EXPECT_EQ(mine.size(), 25u);
      for (auto i : mine) EXPECT_TRUE(all.insert(i).second) << "sample " << i << " on two ranks";
    }
    EXPECT_EQ(all.size(), 100u);
    EXPECT_EQ(*all.rbegin(), 99);
  }
  EXPECT_EQ(rank_indices(10, 1, 4, false), (std::vector<std::int64_t>{1, 5, 9}));  // DistributedSampler's order
  EXPECT_EQ(rank_indices(10, 2, 4, false), (std::vector<std::int64_t>{2, 6, 0}));  // padded with the start
}

TEST(Sampler, ShuffleIsSeededPerEpochAndAPermutation) {
  se::ShardedSampler sampler({1000, 0, 1, true, 42});
  std::set<std::int64_t> seen;
  std::int64_t fixed_points = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const auto s = sampler.sample(0, i);
    seen.insert(s);
    fixed_points += s == i;
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_LT(fixed_points, 20);  // a random permutation has about one
  EXPECT_NE(rank_indices(1000, 0, 1, true, 0), rank_indices(1000, 0, 1, true, 1));
  EXPECT_EQ(rank_indices(1000, 3, 8, true, 5), rank_indices(1000, 3, 8, true, 5));
  EXPECT_THROW(se::ShardedSampler({10, 4, 4, false, 0}), se::DataError);
}

TEST(Loader, ResumesFromASavedPositionAcrossEpochs) {
  auto data = std::make_shared<se::SyntheticTokenDataset>(se::SyntheticTokenOptions{100, 8, 50, 7, 0.0});
  se::DataLoaderOptions options;
  options.micro_batch_size = 4;
  options.rank = 1;
  options.world_size = 2;
  se::ShardedDataLoader a(data, options);
  EXPECT_EQ(a.batches_per_epoch(), 7);  // 25 samples per rank: 6 full batches and one of 1
  for (int i = 0; i < 9; ++i) a.next();
  const auto saved = a.position();
  EXPECT_EQ(saved, (se::DataPosition{1, 8}));
  se::ShardedDataLoader b(data, options);
  b.set_position(saved);
  for (int i = 0; i < 10; ++i) {
    const auto x = a.next(), y = b.next();
    EXPECT_TRUE(torch::equal(x.inputs, y.inputs)) << "batch " << i;
  }
  EXPECT_THROW(b.set_position({0, 26}), se::DataError);
}

TEST(Loader, KMicroBatchesEqualOneBatchOfKTimesTheSize) {
  auto data = std::make_shared<se::RegressionDataset>(se::RegressionOptions{3, 2, 64, 5, 0.1});
  se::DataLoaderOptions small, big;
  small.micro_batch_size = 4;
  big.micro_batch_size = 12;
  se::ShardedDataLoader a(data, small), b(data, big);
  std::vector<torch::Tensor> parts;
  for (int i = 0; i < 3; ++i) parts.push_back(a.next().inputs);
  EXPECT_TRUE(torch::equal(torch::cat(parts), b.next().inputs));
}

TEST(Loader, DropLastSkipsTheShortBatch) {
  auto data = std::make_shared<se::SyntheticTokenDataset>(se::SyntheticTokenOptions{50, 4, 10, 1, 0.0});
  se::DataLoaderOptions options;
  options.micro_batch_size = 4;
  options.drop_last = true;
  se::ShardedDataLoader loader(data, options);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(loader.next().size(), 4);
  EXPECT_EQ(loader.position(), (se::DataPosition{1, 4}));
}

TEST(Synthetic, TokensAreSeededShiftedAndLearnableOnRequest) {
  se::SyntheticTokenDataset uniform({1000, 16, 100, 3, 0.0});
  const auto a = uniform.collate({5, 9}), b = uniform.collate({9});
  EXPECT_TRUE(torch::equal(a.inputs[1], b.inputs[0]));  // a sample depends only on its index
  EXPECT_TRUE(torch::equal(a.inputs.narrow(1, 1, 15), a.targets.narrow(1, 0, 15)));
  EXPECT_EQ(a.inputs.sizes(), torch::IntArrayRef({2, 16}));
  EXPECT_LT(a.inputs.max().item<std::int64_t>(), 1000);
  EXPECT_FALSE(torch::equal(a.inputs[0], a.inputs[1]));
  se::SyntheticTokenDataset chain({1000, 16, 100, 3, 1.0});  // p = 1: each token determines the next
  const auto c = chain.collate({1, 2});
  const auto d = chain.collate({2});
  EXPECT_TRUE(torch::equal(c.inputs[1], d.inputs[0]));
  std::map<std::int64_t, std::int64_t> successor;
  for (int row = 0; row < 2; ++row)
    for (int t = 0; t < 16; ++t) {
      const auto from = c.inputs[row][t].item<std::int64_t>(), to = c.targets[row][t].item<std::int64_t>();
      EXPECT_TRUE(successor.emplace(from, to).first->second == to) << from;
    }
}

TEST(Regression, TargetsAreTheLinearMapPlusNoiseOfTheGivenSize) {
  se::RegressionDataset data({8, 2, 4096, 11, 0.1});
  std::vector<std::int64_t> all(4096);
  std::iota(all.begin(), all.end(), 0);
  const auto batch = data.collate(all);
  const auto residual = batch.targets - (torch::matmul(batch.inputs, data.weight()) + data.bias());
  EXPECT_NEAR(residual.std().item<double>(), 0.1, 0.005);
  EXPECT_NEAR(residual.mean().item<double>(), 0.0, 0.005);
  EXPECT_NEAR(batch.inputs.std().item<double>(), 1.0, 0.02);
  se::RegressionDataset again({8, 2, 4096, 11, 0.1});
  EXPECT_TRUE(torch::equal(again.collate({17}).targets[0], batch.targets[17]));
}

TEST_F(TokenFiles, RawAndLlmcFilesReadBackTheirTokens) {
  std::vector<std::uint16_t> u16(100);
  std::vector<std::uint32_t> u32(100);
  for (int i = 0; i < 100; ++i) {
    u16[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(60000 + i);
    u32[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(100000 + 3 * i);
  }
  write_raw(path("nanogpt.bin"), u16);
  write_raw(path("raw32.bin"), u32);
  write_raw(path("llmc16.bin"), u16, llmc_header(1, 100));
  write_raw(path("llmc32.bin"), u32, llmc_header(2, 100));
  struct Case {
    std::string file;
    se::TokenFormat format;
    bool header;
    std::int64_t first, step;
  };
  for (const auto& c : {Case{"nanogpt.bin", se::TokenFormat::kAuto, false, 60000, 1},
                        Case{"raw32.bin", se::TokenFormat::kUint32, false, 100000, 3},
                        Case{"llmc16.bin", se::TokenFormat::kAuto, true, 60000, 1},
                        Case{"llmc32.bin", se::TokenFormat::kUint32, true, 100000, 3}}) {
    se::TokenFileDataset data({path(c.file), c.format, 0, 9, 0});
    EXPECT_EQ(data.file().num_tokens(), 100) << c.file;
    EXPECT_EQ(data.file().has_llmc_header(), c.header) << c.file;
    EXPECT_EQ(data.size(), 11) << c.file;  // windows of 10 tokens every 9: starts 0..90
    const auto batch = data.collate({0, 10});
    EXPECT_EQ(batch.inputs[0][0].item<std::int64_t>(), c.first) << c.file;
    EXPECT_EQ(batch.inputs[1][0].item<std::int64_t>(), c.first + 90 * c.step) << c.file;
    EXPECT_EQ(batch.targets[1][8].item<std::int64_t>(), c.first + 99 * c.step) << c.file;
  }
  se::TokenFileDataset every_offset({path("nanogpt.bin"), se::TokenFormat::kUint16, 0, 9, 1});
  EXPECT_EQ(every_offset.size(), 91);
}

TEST_F(TokenFiles, BadFilesGetClearErrors) {
  write_raw(path("short.bin"), std::vector<std::uint16_t>{1, 2, 3});
  write_raw(path("odd.bin"), std::vector<std::uint8_t>{1, 2, 3});
  write_raw(path("trunc.bin"), std::vector<std::uint16_t>(50, 1), llmc_header(1, 100));
  write_raw(path("big.bin"), std::vector<std::uint16_t>(40, 7));
  write_raw(path("v1.bin"), std::vector<std::uint16_t>(40, 7), llmc_header(1, 40));
  const auto open = [&](const std::string& file, std::int64_t vocab, se::TokenFormat format = se::TokenFormat::kAuto) {
    return data_error([&] { se::TokenFileDataset({path(file), format, vocab, 8, 0}).collate({0}); });
  };
  EXPECT_NE(open("missing.bin", 0).find("missing.bin: no such file (check the path of the token file)"), std::string::npos);
  EXPECT_NE(open("short.bin", 0).find("fewer than one window"), std::string::npos);
  EXPECT_NE(open("odd.bin", 0).find("not a whole number of uint16"), std::string::npos);
  EXPECT_NE(open("trunc.bin", 0).find("promises 100 tokens"), std::string::npos);
  EXPECT_NE(open("big.bin", 5).find("token 7 at position 0 is outside the model's vocabulary of 5"), std::string::npos);
  EXPECT_NE(open("v1.bin", 0, se::TokenFormat::kUint32).find("version 1"), std::string::npos);
}
