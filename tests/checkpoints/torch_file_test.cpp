// torch.save's zip format: what write_torch_file writes reads back exactly, is laid out as
// PyTorchStreamWriter lays it out (records aligned to 64 bytes), and damage is caught and named.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/crc32.hpp"
#include "checkpoints/torch_file.hpp"
#include "checkpoints/zip_archive.hpp"
#include "tests/checkpoints/checkpoint_test_support.hpp"

namespace shardscope::checkpoints {
namespace {

using test::contains;

std::string write_sample(const test::Folder& dir, const std::string& name) {
  static std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), 0.5f);
  PickleTree t;
  std::vector<StorageBytes> storages;
  const NodeId root = t.dict();
  t.set_root(root);
  t.dict_set(root, "matrix", add_tensor(t, storages, DType::kFloat32, {10, 100}, values.data()));
  const NodeId first = t.node(t.dict_get(root, "matrix").value()).integer;
  // A view of the same storage (as DeepSpeed's flat buffers are): a transposed 10 x 10 corner.
  TensorRef view = t.tensors()[static_cast<std::size_t>(first)];
  view.shape = {10, 10};
  view.strides = {1, 100};
  view.offset = 5;
  t.dict_set(root, "view", t.tensor(view));
  t.dict_set(root, "step", t.integer(7));
  const std::string path = dir.file(name);
  write_torch_file(path, t, storages);
  return path;
}

TEST(TorchFile, RoundTripsTensorsAndViews) {
  const test::Folder dir;
  const TorchFile file(write_sample(dir, "sample.pt"));
  const PickleRef root = file.root();
  EXPECT_EQ(root["step"].as_int(), 7);
  const auto matrix = file.read_float32(root["matrix"].as_tensor());
  ASSERT_EQ(matrix.size(), 1000u);
  EXPECT_EQ(matrix[999], 999.5f);
  const auto view = file.read_float32(root["view"].as_tensor());
  ASSERT_EQ(view.size(), 100u);
  EXPECT_EQ(view[1], 105.5f);   // element [0][1] = storage[5 + 100]
  EXPECT_EQ(view[10], 6.5f);    // element [1][0] = storage[5 + 1]
}

TEST(TorchFile, IsLaidOutAsTorchSaveLaysItOut) {
  const test::Folder dir;
  const ZipReader zip(write_sample(dir, "layout.pt"));
  std::vector<std::string> names;
  for (const auto& e : zip.entries()) {
    names.push_back(e.name);
    EXPECT_EQ(e.data_offset % 64, 0u) << e.name;  // torch.load(mmap=True) maps storages in place
  }
  EXPECT_EQ(names, (std::vector<std::string>{"layout/data.pkl", "layout/.format_version", "layout/.storage_alignment",
                                             "layout/byteorder", "layout/data/0", "layout/version",
                                             "layout/.data/serialization_id"}));
  const auto version = zip.read(*zip.find("layout/version"));
  EXPECT_EQ(std::string(version.begin(), version.end()), "3\n");
}

TEST(TorchFile, NamesTheDamage) {
  const test::Folder dir;
  const std::string path = write_sample(dir, "damaged.pt");
  const auto bytes = test::read_bytes(path);
  // One flipped byte inside the tensor data: the storage's CRC-32 no longer matches.
  auto flipped = bytes;
  const ZipReader clean(path);
  flipped[clean.find("damaged/data/0")->data_offset + 17] ^= 0x40;
  test::write_bytes(path, flipped);
  const TorchFile opened(path);  // the structure is intact
  try {
    opened.read(opened.root()["matrix"].as_tensor());
    FAIL() << "a damaged storage was read";
  } catch (const CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), "damaged/data/0' fails its CRC-32")) << e.what();
  }
  // Cut in half: the end record is gone.
  test::write_bytes(path, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2)));
  try {
    TorchFile{path};
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), path + ": is not a torch.save zip archive")) << e.what();
  }
  // Not a zip at all (a shard replaced by a text file).
  test::write_bytes(path, std::vector<char>(100, 'x'));
  EXPECT_THROW(TorchFile{path}, CheckpointError);
  // torch.save's legacy format starts with a pickle: named as such.
  std::vector<char> legacy(100, '\0');
  legacy[0] = static_cast<char>(0x80);
  legacy[1] = 2;
  test::write_bytes(path, legacy);
  try {
    TorchFile{path};
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), "torch.save's legacy format")) << e.what();
  }
}

TEST(TorchFile, RefusesATensorReachingPastItsStorage) {
  const test::Folder dir;
  std::vector<float> values(10, 1.0f);
  PickleTree t;
  std::vector<StorageBytes> storages;
  const NodeId tensor = add_tensor(t, storages, DType::kFloat32, {10}, values.data());
  TensorRef bad = t.tensors()[static_cast<std::size_t>(t.node(tensor).integer)];
  bad.shape = {1000000};
  t.set_root(t.list({tensor, t.tensor(bad)}));
  write_torch_file(dir.file("past.pt"), t, storages);
  try {
    TorchFile{dir.file("past.pt")};
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), "reaches past the end of its storage")) << e.what();
  }
}

TEST(Crc32, MatchesTheStandardCheckValue) {
  const std::string text = "123456789";
  EXPECT_EQ(crc32(text.data(), text.size()), 0xCBF43926u);
  std::uint32_t piecewise = crc32_update(0, text.data(), 4);
  piecewise = crc32_update(piecewise, text.data() + 4, 5);
  EXPECT_EQ(piecewise, 0xCBF43926u);
}

}  // namespace
}  // namespace shardscope::checkpoints
