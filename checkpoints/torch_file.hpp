#pragma once
// torch.save's file format (the zip format torch has written since 1.6): one folder named after
// the file holding data.pkl (the pickled object, tensors as persistent ids), data/<key> (each
// storage's raw little-endian bytes), byteorder, version, .format_version, .storage_alignment
// and .data/serialization_id. TorchFile reads one through the bounded zip and pickle readers;
// write_torch_file writes one that torch.load(weights_only=True) opens.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoints/host_tensor.hpp"
#include "checkpoints/pickle_tree.hpp"
#include "checkpoints/zip_archive.hpp"

namespace shardscope::checkpoints {

class TorchFile {
 public:
  /// Opens and parses `path`; throws CheckpointError naming it: not a zip (e.g. the legacy
  /// pre-1.6 format, which is refused with that name), no data.pkl, big-endian data, a pickle
  /// the reader refuses, a tensor outside its storage.
  explicit TorchFile(const std::string& path);

  const std::string& path() const { return zip_.path(); }
  std::uint64_t file_size() const { return zip_.file_size(); }
  const PickleTree& tree() const { return tree_; }
  /// The top-level value, for typed access with messages that name this file.
  PickleRef root() const { return PickleRef(tree_, tree_.root(), path()); }
  /// A tensor's elements, contiguous, in its own dtype.
  HostTensor read(const TensorRef& tensor) const;
  /// A tensor's elements as fp32.
  std::vector<float> read_float32(const TensorRef& tensor) const;

 private:
  void check_tensor_bounds() const;
  const ZipEntry& storage_entry(std::uint32_t storage) const;

  ZipReader zip_;
  std::string prefix_;  ///< "<folder>/"
  PickleTree tree_;
  std::vector<const ZipEntry*> storage_entries_;
};

/// The bytes of one storage to be written as data/<key>.
struct StorageBytes {
  const void* data = nullptr;
  std::uint64_t size = 0;
};

/// What a written file is: its size and its CRC-32, which the manifest records.
struct FileDigest {
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
};

/// Writes `tree` with `storages[i]` as the bytes of tree.storages()[i], atomically (AtomicFile),
/// to `path`; the records are named after the file, as torch.save names them.
FileDigest write_torch_file(const std::string& path, const PickleTree& tree, const std::vector<StorageBytes>& storages);

/// Adds a contiguous CPU tensor of `dtype` and `shape` whose bytes will be `bytes` to `tree`
/// (a new storage) and returns its node; `storages` gets the bytes, in storage order.
NodeId add_tensor(PickleTree& tree, std::vector<StorageBytes>& storages, DType dtype,
                  const std::vector<std::int64_t>& shape, const void* bytes);

}  // namespace shardscope::checkpoints
