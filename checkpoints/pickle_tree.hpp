#pragma once
// The values a checkpoint pickle holds, as plain data: None, bool, int, float, str, bytes,
// lists, tuples, dicts (insertion-ordered, as Python's and OrderedDict are), sets, tensors
// (a view into one of the file's storages) and "objects" of the few DeepSpeed classes a
// checkpoint carries (LossScaler, fragment_address), kept as their class name and attribute dict.
//
// Values live in one arena and refer to each other by index, as the pickle's memo does: a value
// the pickle shares (BINGET) is one node referenced twice, a self-referencing list is a cycle of
// indices, and destroying the tree is one vector's destruction however deep it nests. Nothing
// here recurses over the tree.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoints/host_tensor.hpp"

namespace shardscope::checkpoints {

using NodeId = std::uint32_t;

enum class PickleKind {
  kNone, kBool, kInt, kFloat, kString, kBytes, kList, kTuple, kDict, kSet, kTensor, kStorage, kObject, kGlobal
};

/// A storage a tensor views: the persistent id ('storage', <dtype>Storage, key, location, numel).
struct StorageRef {
  DType dtype = DType::kFloat32;
  std::string key;       ///< the record data/<key> of the zip
  std::string location;  ///< "cpu", "cuda:0", ...
  std::int64_t numel = 0;
};

/// A tensor: `shape` and `strides` (elements) from `offset` in storage `storage`.
struct TensorRef {
  std::uint32_t storage = 0;  ///< index into PickleTree::storages()
  std::int64_t offset = 0;
  std::vector<std::int64_t> shape, strides;
  bool requires_grad = false;
  std::int64_t numel() const;
};

struct PickleNode {
  PickleKind kind = PickleKind::kNone;
  bool boolean = false;
  std::int64_t integer = 0;  ///< kInt; kTensor: index into tensors(); kStorage: into storages()
  double real = 0;
  std::string text;  ///< kString, kBytes; kGlobal and kObject: "module.name"; kTuple: "torch.Size" or ""
  std::vector<NodeId> items;  ///< kList, kTuple, kSet; kDict: key, value, key, value, ...
  NodeId state = 0;           ///< kObject: its attribute dict (0: none)
  std::int32_t index = -1;    ///< kDict: its key index in PickleTree
  std::uint64_t hash = 0;     ///< kString, kInt as a dict key: computed once
  bool hashed = false;
};

class PickleTree {
 public:
  PickleTree();
  NodeId add(PickleNode node);
  const PickleNode& node(NodeId id) const { return nodes_[id]; }
  PickleNode& node(NodeId id) { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  NodeId root() const { return root_; }
  void set_root(NodeId id) { root_ = id; }

  // builders
  NodeId none();
  NodeId boolean(bool v);
  NodeId integer(std::int64_t v);
  NodeId real(double v);
  NodeId string(std::string v);
  NodeId list(std::vector<NodeId> items = {});
  NodeId tuple(std::vector<NodeId> items = {});
  NodeId size_tuple(const std::vector<std::int64_t>& dims);  ///< torch.Size
  NodeId dict(bool ordered = false);                          ///< ordered: collections.OrderedDict
  NodeId set(std::vector<NodeId> items = {});
  NodeId tensor(TensorRef tensor);
  NodeId storage(std::uint32_t index);  ///< a reference to storages()[index]
  NodeId global(std::string name);
  NodeId object(std::string class_name, NodeId state);
  std::uint32_t add_storage(StorageRef storage);

  /// Sets dict[key] = value (a later value replaces an earlier one for str and int keys, as in Python).
  void dict_set(NodeId dict, NodeId key, NodeId value);
  /// Convenience: dict[str] = value.
  void dict_set(NodeId dict, const std::string& key, NodeId value) { dict_set(dict, string(key), value); }
  /// The value of dict[key] for a str or int key, if present.
  std::optional<NodeId> dict_get(NodeId dict, const std::string& key) const;
  std::optional<NodeId> dict_get(NodeId dict, std::int64_t key) const;
  /// Whether the dict is a collections.OrderedDict (written as one).
  bool dict_ordered(NodeId dict) const { return node(dict).text == "collections.OrderedDict"; }

  const std::vector<TensorRef>& tensors() const { return tensors_; }
  const std::vector<StorageRef>& storages() const { return storages_; }

 private:
  /// The hash of a str or int key (cached in the node), nullopt for other keys (never deduplicated).
  std::optional<std::uint64_t> key_hash(NodeId key);
  bool same_key(NodeId a, NodeId b) const;
  std::optional<NodeId> find(NodeId dict, std::uint64_t hash, PickleKind kind, const std::string* text,
                             std::int64_t integer) const;
  std::vector<PickleNode> nodes_;
  std::vector<TensorRef> tensors_;
  std::vector<StorageRef> storages_;
  /// Per dict: key hash -> positions in items of the keys with that hash. Lookups and the
  /// replacement of repeated keys stay O(1) however large the dict, and a key shared through the
  /// memo is hashed once, so no input makes building a dict quadratic.
  std::vector<std::unordered_map<std::uint64_t, std::vector<std::size_t>>> dict_indexes_;
  NodeId root_ = 0;
};

/// The Python type name of a node for messages ("dict", "list", "tensor", "LossScaler", ...).
std::string kind_name(const PickleTree& tree, NodeId id);

/// A typed view of one value with its path from the root ("optimizer_state_dict.fp32_flat_groups[0]"),
/// so that every "wrong type" or "missing key" message names the file and the entry.
class PickleRef {
 public:
  PickleRef(const PickleTree& tree, NodeId id, std::string file, std::string path = "")
      : tree_(&tree), id_(id), file_(std::move(file)), path_(std::move(path)) {}

  NodeId id() const { return id_; }
  const PickleNode& node() const { return tree_->node(id_); }
  PickleKind kind() const { return node().kind; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  const PickleTree& tree() const { return *tree_; }

  bool is_none() const { return kind() == PickleKind::kNone; }
  bool is_dict() const { return kind() == PickleKind::kDict; }
  bool has(const std::string& key) const;
  /// dict[key]; throws CheckpointError (damaged) naming the file and path when absent or not a dict.
  PickleRef operator[](const std::string& key) const;
  PickleRef operator[](std::int64_t key) const;  ///< dict with int keys
  std::optional<PickleRef> get(const std::string& key) const;
  /// list or tuple item i.
  PickleRef at(std::size_t i) const;
  std::size_t length() const;  ///< items of a list, tuple or set; entries of a dict
  /// A dict's entries, in order.
  std::vector<std::pair<PickleRef, PickleRef>> entries() const;
  std::vector<PickleRef> items() const;  ///< a list's, tuple's or set's items

  std::int64_t as_int() const;  ///< int, bool, or an IntEnum such as ZeroStageEnum
  double as_double() const;     ///< float or int
  bool as_bool() const;
  const std::string& as_string() const;
  const TensorRef& as_tensor() const;
  std::vector<std::int64_t> as_int_list() const;  ///< a tuple, list or torch.Size of ints
  /// Throws CheckpointError (damaged): "<file>: <path> <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const PickleTree* tree_;
  NodeId id_;
  std::string file_, path_;
};

}  // namespace shardscope::checkpoints
