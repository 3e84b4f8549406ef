// safetensors headers written by the test itself: exact counts, dtypes, largest tensor and
// module, sharded checkpoints through the index, and every malformed input named clearly.
#include <cstdint>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "estimator/estimator_error.hpp"
#include "estimator/safetensors_header.hpp"

namespace shardscope::estimator {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
};

int dtype_size(const std::string& dtype) { return dtype == "F32" ? 4 : dtype == "I8" ? 1 : 2; }

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shardscope_st_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the 8-byte little-endian length, the JSON header and zero-filled data.
  std::string write(const std::string& name, const std::vector<Tensor>& tensors, long long drop_bytes = 0) {
    json header = {{"__metadata__", {{"format", "pt"}}}};
    std::uint64_t offset = 0;
    for (const auto& t : tensors) {
      std::uint64_t n = 1;
      for (auto d : t.shape) n *= static_cast<std::uint64_t>(d);
      const std::uint64_t bytes = n * static_cast<std::uint64_t>(dtype_size(t.dtype));
      header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
      offset += bytes;
    }
    return write_raw(name, header.dump(), static_cast<long long>(offset) - drop_bytes);
  }

  std::string write_raw(const std::string& name, const std::string& header, long long data_bytes,
                        std::uint64_t declared_length = 0) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    std::uint64_t n = declared_length ? declared_length : header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
    out << std::string(static_cast<std::size_t>(std::max(0LL, data_bytes)), '\0');
    return path;
  }

  std::string error_of(const std::string& path) {
    try {
      describe_safetensors(path);
    } catch (const EstimatorError& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

TEST_F(SafetensorsTest, CountsDtypesLargestTensorAndModule) {
  const std::string path = write("model.safetensors", {{"embed.weight", "BF16", {100, 16}},
                                                       {"proj.weight", "F32", {40, 40}},
                                                       {"proj.bias", "F32", {40}},
                                                       {"norm.weight", "BF16", {16}}});
  const ModelDescription d = describe_safetensors(path);
  EXPECT_EQ(d.total_params, 1600 + 1600 + 40 + 16);
  EXPECT_EQ(d.params_by_dtype.at("BF16"), 1616);
  EXPECT_EQ(d.params_by_dtype.at("F32"), 1640);
  // Ties go to the first seen tensor; the module groups weight + bias (DeepSpeed's recurse=False).
  EXPECT_EQ(d.largest_tensor_params, 1600);
  EXPECT_EQ(d.largest_layer_name, "proj");
  EXPECT_EQ(d.largest_layer_params, 1640);
  EXPECT_EQ(d.source, ModelSource::kSafetensors);
  EXPECT_FALSE(d.shape.has_value());
}

TEST_F(SafetensorsTest, HeaderFieldsAreReadWithoutTheWeights) {
  const std::string path = write("a.safetensors", {{"w", "F16", {3, 5}}});
  const SafetensorsHeader h = read_safetensors_header(path);
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{3, 5}));
  EXPECT_EQ(h.tensors[0].end - h.tensors[0].begin, 30u);
  EXPECT_EQ(h.file_bytes, 8 + h.header_bytes + 30);
}

TEST_F(SafetensorsTest, ShardedCheckpointThroughIndex) {
  write("model-00001-of-00002.safetensors", {{"a.weight", "BF16", {10, 10}}, {"b.weight", "BF16", {5}}});
  write("model-00002-of-00002.safetensors", {{"c.weight", "BF16", {20, 10}}});
  const json index = {{"metadata", {{"total_size", 2 * (100 + 5 + 200)}}},
                      {"weight_map",
                       {{"a.weight", "model-00001-of-00002.safetensors"},
                        {"b.weight", "model-00001-of-00002.safetensors"},
                        {"c.weight", "model-00002-of-00002.safetensors"}}}};
  std::ofstream((dir_ / "model.safetensors.index.json").string()) << index.dump();
  const ModelDescription d = describe_safetensors((dir_ / "model.safetensors.index.json").string());
  EXPECT_EQ(d.total_params, 305);
  EXPECT_EQ(d.largest_tensor_name, "c.weight");
  EXPECT_TRUE(d.notes.empty());
}

TEST_F(SafetensorsTest, IndexProblemsAreNamed) {
  write("s1.safetensors", {{"a.weight", "BF16", {4}}});
  std::ofstream((dir_ / "missing_tensor.json").string())
      << json{{"weight_map", {{"a.weight", "s1.safetensors"}, {"z.weight", "s1.safetensors"}}}}.dump();
  EXPECT_NE(error_of((dir_ / "missing_tensor.json").string()).find("'z.weight'"), std::string::npos);
  std::ofstream((dir_ / "missing_shard.json").string()) << json{{"weight_map", {{"a.weight", "s9.safetensors"}}}}.dump();
  EXPECT_NE(error_of((dir_ / "missing_shard.json").string()).find("s9.safetensors"), std::string::npos);
  std::ofstream((dir_ / "no_map.json").string()) << json{{"metadata", {}}}.dump();
  EXPECT_NE(error_of((dir_ / "no_map.json").string()).find("weight_map"), std::string::npos);
  std::ofstream((dir_ / "bad_size.json").string())
      << json{{"metadata", {{"total_size", 999}}}, {"weight_map", {{"a.weight", "s1.safetensors"}}}}.dump();
  const ModelDescription d = describe_safetensors((dir_ / "bad_size.json").string());
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("total_size"), std::string::npos);
}

TEST_F(SafetensorsTest, MalformedFiles) {
  const std::string tiny = (dir_ / "tiny.safetensors").string();
  std::ofstream(tiny, std::ios::binary) << "abc";
  EXPECT_NE(error_of(tiny).find("truncated"), std::string::npos) << error_of(tiny);

  const std::string too_long = write_raw("long.safetensors", "{}", 0, 5000);
  EXPECT_NE(error_of(too_long).find("claims 5000 bytes"), std::string::npos) << error_of(too_long);

  const std::string absurd = write_raw("absurd.safetensors", "{}", 0, 1ULL << 40);
  EXPECT_NE(error_of(absurd).find("not plausible"), std::string::npos);

  const std::string not_json = write_raw("nj.safetensors", "{\"a\": [1,", 0);
  EXPECT_NE(error_of(not_json).find("not valid JSON"), std::string::npos);

  const std::string cut = write("cut.safetensors", {{"w", "F32", {1000}}}, 100);
  EXPECT_NE(error_of(cut).find("truncated"), std::string::npos) << error_of(cut);

  const std::string dtype = write_raw(
      "dtype.safetensors", R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 2]}})", 2);
  EXPECT_NE(error_of(dtype).find("'Q4'"), std::string::npos);

  const std::string offsets = write_raw(
      "off.safetensors", R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}})", 16);
  const std::string message = error_of(offsets);
  EXPECT_NE(message.find("tensor 'w'"), std::string::npos) << message;
  EXPECT_NE(message.find("do not hold 16 bytes"), std::string::npos) << message;

  const std::string shape = write_raw(
      "shape.safetensors", R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4);
  EXPECT_NE(error_of(shape).find("shape"), std::string::npos);

  const std::string empty = write_raw("empty.safetensors", R"({"__metadata__": {}})", 0);
  EXPECT_NE(error_of(empty).find("no tensors"), std::string::npos);

  EXPECT_NE(error_of((dir_ / "absent.safetensors").string()).find("no such file"), std::string::npos);
}

TEST_F(SafetensorsTest, ShapeFromAConfigKeepsTheCheckpointsCounts) {
  const ModelDescription counted = describe_safetensors(write("m.safetensors", {{"w.weight", "BF16", {10, 10}}}));
  TransformerShape s = default_shape(TransformerLayout::kLlama);
  s.layers = 1;
  s.hidden = 8;
  s.heads = 2;
  s.ffn = 16;
  s.vocab = 10;
  s.seq_len = 32;
  const ModelDescription merged = with_shape_of(counted, describe_transformer(s, "cfg"));
  EXPECT_EQ(merged.total_params, 100);
  ASSERT_TRUE(merged.shape.has_value());
  EXPECT_EQ(merged.shape->hidden, 8);
  ASSERT_EQ(merged.notes.size(), 1u);
  EXPECT_NE(merged.notes[0].find("using the checkpoint's"), std::string::npos);
}

// Issue 22's campaign: a header number beyond a double, a shape whose product overflows, a
// directory or a device given as the file.
TEST_F(SafetensorsTest, HostileHeadersAreNamedErrorsNotRawExceptionsOrUb) {
  const std::string overflow = write_raw("inf.safetensors", "{\"w\": {\"dtype\": \"F32\",\n \"shape\": [1e999], "
                                         "\"data_offsets\": [0, 4]}}", 4);
  EXPECT_EQ(error_of(overflow), overflow + ":2: the number 1e999 is beyond the range of a 64-bit float (about 1.8e308); "
                                           "write a finite value");
  const std::string keyed = write_raw("key.safetensors", R"({"__metadata__": {"x": 1e999}})", 0);
  EXPECT_NE(error_of(keyed).find("the number 1e999 of key 'x'"), std::string::npos) << error_of(keyed);
  // 2^62 x 8 elements: the double product was cast to long long (UB) and wrapped.
  const std::string huge = write_raw(
      "huge.safetensors", R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 8], "data_offsets": [0, 4]}})", 4);
  EXPECT_EQ(error_of(huge), huge + ": tensor 'w': 'shape' multiplies to more than 2^64 bytes of F32: the header is "
                                   "damaged or not a safetensors header");
  EXPECT_NE(error_of(dir_.string()).find("is a directory, not a safetensors file"), std::string::npos);
  EXPECT_NE(error_of("/dev/zero").find("is a character device"), std::string::npos);
}

TEST_F(SafetensorsTest, AZeroDimensionMakesAnEmptyTensorWhateverTheOtherDimensions) {
  const std::string path = write_raw(
      "zero.safetensors", R"({"e": {"dtype": "F32", "shape": [0, 4611686018427387904, 8], "data_offsets": [0, 0]},
                              "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8);
  EXPECT_EQ(describe_safetensors(path).total_params, 2);
}

}  // namespace
}  // namespace shardscope::estimator
