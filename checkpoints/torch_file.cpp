#include "checkpoints/torch_file.hpp"

#include <cstring>
#include <filesystem>
#include <random>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/pickle_reader.hpp"
#include "checkpoints/pickle_writer.hpp"
#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints {
namespace {

constexpr std::uint64_t kMaxPickleBytes = 1ull << 31;  // data.pkl holds structure, not tensor data

// The last element a view reaches, offset + sum((size_i - 1) * stride_i), or -1 if it reaches
// none (a zero-size dimension); nullopt when the arithmetic overflows or a stride is negative.
std::optional<std::int64_t> last_element(const TensorRef& t) {
  __int128 last = t.offset;
  if (t.offset < 0) return std::nullopt;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 0 || t.strides[i] < 0) return std::nullopt;
    if (t.shape[i] == 0) return -1;
    last += static_cast<__int128>(t.shape[i] - 1) * t.strides[i];
    if (last > std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  }
  return static_cast<std::int64_t>(last);
}

bool is_contiguous(const TensorRef& t) {
  std::int64_t expected = 1;
  for (std::size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

// The zip archive of a torch.save file; a file in torch.save's legacy format (a bare pickle,
// starting with the protocol opcode) is named as such rather than as a broken zip.
ZipReader open_zip(const std::string& path) {
  try {
    return ZipReader(path);
  } catch (const CheckpointError& e) {
    if (e.kind() != CheckpointErrorKind::kDamaged) throw;
    const RegularFile file(path);
    unsigned char head[2] = {0, 0};
    if (file.size() >= 2) file.read_at(0, 2, head);
    if (head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
      throw damaged(path, "is in torch.save's legacy format (before PyTorch 1.6; DeepSpeed writes it with \"checkpoint\": "
                          "{\"checkpoint_serialization\": false}), which this reader does not read: save with the zip format");
    throw;
  }
}

}  // namespace

TorchFile::TorchFile(const std::string& path) : zip_(open_zip(path)) {
  const ZipEntry* pickle = nullptr;
  for (const auto& e : zip_.entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      if (pickle) throw damaged(path, "holds two data.pkl records");
      pickle = &e;
      prefix_ = e.name.substr(0, slash + 1);
    }
  }
  if (!pickle) throw damaged(path, "is a zip archive without a data.pkl record, so not a torch.save file");
  if (const ZipEntry* order = zip_.find(prefix_ + "byteorder")) {
    const auto text = zip_.read(*order);
    if (std::string(text.begin(), text.end()) != "little")
      throw damaged(path, "holds big-endian tensor data, which this reader does not convert");
  }
  if (pickle->size > kMaxPickleBytes) throw damaged(path, "has a data.pkl of " + std::to_string(pickle->size) + " bytes");
  const auto bytes = zip_.read(*pickle);
  tree_ = read_pickle(bytes.data(), bytes.size(), path);
  for (std::uint32_t s = 0; s < tree_.storages().size(); ++s) {
    const StorageRef& ref = tree_.storages()[s];
    const ZipEntry* entry = zip_.find(prefix_ + "data/" + ref.key);
    if (!entry) throw damaged(path, "names storage '" + printable(ref.key) + "', which has no data/" + printable(ref.key) + " record");
    const __int128 needed = static_cast<__int128>(ref.numel) * static_cast<__int128>(element_size(ref.dtype));
    if (needed > static_cast<__int128>(entry->size))
      throw damaged(path, "storage '" + printable(ref.key) + "' should hold " + std::to_string(ref.numel) + " " +
                              dtype_name(ref.dtype) + " elements but its record has " + std::to_string(entry->size) +
                              " bytes (truncated?)");
    storage_entries_.push_back(entry);
  }
  check_tensor_bounds();
}

void TorchFile::check_tensor_bounds() const {
  for (const auto& t : tree_.tensors()) {
    const StorageRef& s = tree_.storages().at(t.storage);
    const auto last = last_element(t);
    if (!last || *last >= s.numel || !checked_numel(t.shape))
      throw damaged(path(), "a tensor of shape [" + [&] {
        std::string dims;
        for (auto d : t.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        return dims;
      }() + "] reaches past the end of its storage '" + printable(s.key) + "' of " + std::to_string(s.numel) + " elements");
  }
}

const ZipEntry& TorchFile::storage_entry(std::uint32_t storage) const { return *storage_entries_.at(storage); }

HostTensor TorchFile::read(const TensorRef& t) const {
  const StorageRef& s = tree_.storages().at(t.storage);
  const ZipEntry& entry = storage_entry(t.storage);
  const std::size_t es = element_size(s.dtype);
  HostTensor out(s.dtype, t.shape);
  const std::int64_t n = out.numel();
  if (n == 0) return out;
  if (is_contiguous(t)) {
    if (t.offset == 0 && static_cast<std::uint64_t>(n) * es == entry.size) {
      out.bytes = zip_.read(entry);  // the whole record: its CRC-32 is checked on the way
    } else {
      zip_.read_range(entry, static_cast<std::uint64_t>(t.offset) * es, out.bytes.size(), out.bytes.data());
    }
    return out;
  }
  // A strided view: read the span it covers and gather.
  const std::int64_t last = *last_element(t);
  std::vector<char> span(static_cast<std::size_t>(last - t.offset + 1) * es);
  zip_.read_range(entry, static_cast<std::uint64_t>(t.offset) * es, span.size(), span.data());
  std::vector<std::int64_t> index(t.shape.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t at = 0;
    for (std::size_t d = 0; d < index.size(); ++d) at += index[d] * t.strides[d];
    std::memcpy(out.bytes.data() + static_cast<std::size_t>(i) * es, span.data() + static_cast<std::size_t>(at) * es, es);
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

std::vector<float> TorchFile::read_float32(const TensorRef& t) const {
  HostTensor h = read(t);
  if (h.dtype == DType::kFloat32) {
    std::vector<float> v(static_cast<std::size_t>(h.numel()));
    if (!v.empty()) std::memcpy(v.data(), h.bytes.data(), h.bytes.size());
    return v;
  }
  return h.to_float32();
}

FileDigest write_torch_file(const std::string& path, const PickleTree& tree, const std::vector<StorageBytes>& storages) {
  if (storages.size() != tree.storages().size())
    throw std::logic_error("write_torch_file: " + std::to_string(storages.size()) + " storages' bytes for " +
                           std::to_string(tree.storages().size()) + " storages");
  const std::string folder = std::filesystem::path(path).stem().string() + "/";
  const std::vector<char> pickle = write_pickle(tree);
  AtomicFile file(path);
  ZipWriter zip(file);
  zip.add(folder + "data.pkl", pickle.data(), pickle.size());
  zip.add(folder + ".format_version", "1", 1);
  zip.add(folder + ".storage_alignment", "64", 2);
  zip.add(folder + "byteorder", "little", 6);
  for (std::size_t i = 0; i < storages.size(); ++i) {
    const StorageRef& ref = tree.storages()[i];
    if (storages[i].size != static_cast<std::uint64_t>(ref.numel) * element_size(ref.dtype))
      throw std::logic_error("write_torch_file: storage '" + ref.key + "' has the wrong number of bytes");
    zip.add(folder + "data/" + ref.key, storages[i].data, static_cast<std::size_t>(storages[i].size));
  }
  zip.add(folder + "version", "3\n", 2);
  std::random_device random;
  std::string id;
  while (id.size() < 40) id += std::to_string(random() % 10);
  zip.add(folder + ".data/serialization_id", id.data(), id.size());
  zip.finish();
  const FileDigest digest{file.size(), file.crc32()};
  file.commit();
  return digest;
}

NodeId add_tensor(PickleTree& tree, std::vector<StorageBytes>& storages, DType dtype,
                  const std::vector<std::int64_t>& shape, const void* bytes) {
  const auto numel = checked_numel(shape);
  if (!numel) throw std::invalid_argument("add_tensor: the shape overflows");
  StorageRef s;
  s.dtype = dtype;
  s.key = std::to_string(tree.storages().size());
  s.location = "cpu";
  s.numel = *numel;
  const std::uint32_t index = tree.add_storage(s);
  storages.push_back({bytes, static_cast<std::uint64_t>(*numel) * element_size(dtype)});
  TensorRef t;
  t.storage = index;
  t.shape = shape;
  t.strides.assign(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * shape[i];
  return tree.tensor(std::move(t));
}

}  // namespace shardscope::checkpoints
