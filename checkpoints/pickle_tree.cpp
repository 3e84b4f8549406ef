#include "checkpoints/pickle_tree.hpp"

#include <functional>
#include <string_view>

#include "checkpoints/checkpoint_error.hpp"

namespace shardscope::checkpoints {

std::int64_t TensorRef::numel() const { return checked_numel(shape).value_or(0); }

PickleTree::PickleTree() { nodes_.push_back(PickleNode{}); }  // node 0: None, the "no state" marker

NodeId PickleTree::add(PickleNode node) {
  if (node.kind == PickleKind::kDict && node.index < 0) {
    node.index = static_cast<std::int32_t>(dict_indexes_.size());
    dict_indexes_.emplace_back();
  }
  nodes_.push_back(std::move(node));
  return static_cast<NodeId>(nodes_.size() - 1);
}

namespace {

PickleNode node_of(PickleKind kind, std::int64_t integer = 0, std::string text = {}, std::vector<NodeId> items = {}) {
  PickleNode n;
  n.kind = kind;
  n.integer = integer;
  n.text = std::move(text);
  n.items = std::move(items);
  return n;
}

}  // namespace

NodeId PickleTree::none() { return add({}); }
NodeId PickleTree::boolean(bool v) {
  PickleNode n = node_of(PickleKind::kBool);
  n.boolean = v;
  return add(std::move(n));
}
NodeId PickleTree::integer(std::int64_t v) { return add(node_of(PickleKind::kInt, v)); }
NodeId PickleTree::real(double v) {
  PickleNode n = node_of(PickleKind::kFloat);
  n.real = v;
  return add(std::move(n));
}
NodeId PickleTree::string(std::string v) { return add(node_of(PickleKind::kString, 0, std::move(v))); }
NodeId PickleTree::list(std::vector<NodeId> items) { return add(node_of(PickleKind::kList, 0, {}, std::move(items))); }
NodeId PickleTree::tuple(std::vector<NodeId> items) { return add(node_of(PickleKind::kTuple, 0, {}, std::move(items))); }
NodeId PickleTree::size_tuple(const std::vector<std::int64_t>& dims) {
  std::vector<NodeId> items;
  for (auto d : dims) items.push_back(integer(d));
  const NodeId id = tuple(std::move(items));
  nodes_[id].text = "torch.Size";
  return id;
}
NodeId PickleTree::dict(bool ordered) {
  return add(node_of(PickleKind::kDict, 0, ordered ? "collections.OrderedDict" : ""));
}
NodeId PickleTree::set(std::vector<NodeId> items) { return add(node_of(PickleKind::kSet, 0, {}, std::move(items))); }
NodeId PickleTree::tensor(TensorRef t) {
  tensors_.push_back(std::move(t));
  return add(node_of(PickleKind::kTensor, static_cast<std::int64_t>(tensors_.size() - 1)));
}
NodeId PickleTree::global(std::string name) { return add(node_of(PickleKind::kGlobal, 0, std::move(name))); }
NodeId PickleTree::object(std::string class_name, NodeId state) {
  PickleNode n = node_of(PickleKind::kObject, 0, std::move(class_name));
  n.state = state;
  return add(std::move(n));
}
NodeId PickleTree::storage(std::uint32_t index) { return add(node_of(PickleKind::kStorage, index)); }
std::uint32_t PickleTree::add_storage(StorageRef s) {
  storages_.push_back(std::move(s));
  return static_cast<std::uint32_t>(storages_.size() - 1);
}

namespace {

std::uint64_t hash_text(const std::string& text, char kind) {
  return std::hash<std::string_view>{}(text) * 31 + static_cast<unsigned char>(kind);
}
std::uint64_t hash_int(std::int64_t v) { return std::hash<std::int64_t>{}(v) * 31 + 'i'; }

}  // namespace

std::optional<std::uint64_t> PickleTree::key_hash(NodeId key) {
  PickleNode& n = nodes_[key];
  if (n.kind != PickleKind::kString && n.kind != PickleKind::kInt) return std::nullopt;
  if (!n.hashed) {
    n.hash = n.kind == PickleKind::kString ? hash_text(n.text, 's') : hash_int(n.integer);
    n.hashed = true;
  }
  return n.hash;
}

bool PickleTree::same_key(NodeId a, NodeId b) const {
  if (a == b) return true;
  const PickleNode &x = nodes_[a], &y = nodes_[b];
  if (x.kind != y.kind) return false;
  return x.kind == PickleKind::kInt ? x.integer == y.integer : x.text == y.text;
}

void PickleTree::dict_set(NodeId dict, NodeId key, NodeId value) {
  const auto hash = key_hash(key);
  PickleNode& d = nodes_[dict];
  if (hash) {
    auto& positions = dict_indexes_[static_cast<std::size_t>(d.index)][*hash];
    for (std::size_t at : positions)
      if (same_key(d.items[at], key)) {
        d.items[at + 1] = value;
        return;
      }
    positions.push_back(d.items.size());
  }
  d.items.push_back(key);
  d.items.push_back(value);
}

std::optional<NodeId> PickleTree::find(NodeId dict, std::uint64_t hash, PickleKind kind, const std::string* text,
                                       std::int64_t integer) const {
  const auto& index = dict_indexes_[static_cast<std::size_t>(nodes_[dict].index)];
  auto it = index.find(hash);
  if (it == index.end()) return std::nullopt;
  const auto& items = nodes_[dict].items;
  for (std::size_t at : it->second) {
    const PickleNode& k = nodes_[items[at]];
    if (k.kind == kind && (kind == PickleKind::kInt ? k.integer == integer : k.text == *text)) return items[at + 1];
  }
  return std::nullopt;
}

std::optional<NodeId> PickleTree::dict_get(NodeId dict, const std::string& key) const {
  return find(dict, hash_text(key, 's'), PickleKind::kString, &key, 0);
}

std::optional<NodeId> PickleTree::dict_get(NodeId dict, std::int64_t key) const {
  return find(dict, hash_int(key), PickleKind::kInt, nullptr, key);
}

std::string kind_name(const PickleTree& tree, NodeId id) {
  const PickleNode& n = tree.node(id);
  switch (n.kind) {
    case PickleKind::kNone: return "None";
    case PickleKind::kBool: return "bool";
    case PickleKind::kInt: return n.text.empty() ? "int" : n.text;
    case PickleKind::kFloat: return "float";
    case PickleKind::kString: return "str";
    case PickleKind::kBytes: return "bytes";
    case PickleKind::kList: return "list";
    case PickleKind::kTuple: return n.text.empty() ? "tuple" : n.text;
    case PickleKind::kDict: return n.text.empty() ? "dict" : n.text;
    case PickleKind::kSet: return "set";
    case PickleKind::kTensor: return "tensor";
    case PickleKind::kStorage: return "storage";
    case PickleKind::kObject: return n.text;
    case PickleKind::kGlobal: return "global " + n.text;
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------

void PickleRef::fail(const std::string& what) const {
  throw damaged(file_, (path_.empty() ? std::string("the top-level value") : "'" + path_ + "'") + " " + what);
}

bool PickleRef::has(const std::string& key) const { return is_dict() && tree_->dict_get(id_, key).has_value(); }

std::optional<PickleRef> PickleRef::get(const std::string& key) const {
  if (!is_dict()) fail("is a " + kind_name(*tree_, id_) + ", not a dict");
  const auto v = tree_->dict_get(id_, key);
  if (!v) return std::nullopt;
  return PickleRef(*tree_, *v, file_, path_.empty() ? key : path_ + "." + key);
}

PickleRef PickleRef::operator[](const std::string& key) const {
  auto v = get(key);
  if (!v) fail("has no '" + key + "' entry");
  return *v;
}

PickleRef PickleRef::operator[](std::int64_t key) const {
  if (!is_dict()) fail("is a " + kind_name(*tree_, id_) + ", not a dict");
  const auto v = tree_->dict_get(id_, key);
  if (!v) fail("has no entry " + std::to_string(key));
  return PickleRef(*tree_, *v, file_, path_ + "[" + std::to_string(key) + "]");
}

PickleRef PickleRef::at(std::size_t i) const {
  if (kind() != PickleKind::kList && kind() != PickleKind::kTuple) fail("is a " + kind_name(*tree_, id_) + ", not a list");
  if (i >= node().items.size())
    fail("has " + std::to_string(node().items.size()) + " items, not " + std::to_string(i + 1));
  return PickleRef(*tree_, node().items[i], file_, path_ + "[" + std::to_string(i) + "]");
}

std::size_t PickleRef::length() const {
  switch (kind()) {
    case PickleKind::kList:
    case PickleKind::kTuple:
    case PickleKind::kSet: return node().items.size();
    case PickleKind::kDict: return node().items.size() / 2;
    default: fail("is a " + kind_name(*tree_, id_) + ", not a container");
  }
}

std::vector<std::pair<PickleRef, PickleRef>> PickleRef::entries() const {
  if (!is_dict()) fail("is a " + kind_name(*tree_, id_) + ", not a dict");
  std::vector<std::pair<PickleRef, PickleRef>> out;
  const auto& items = node().items;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    const PickleNode& k = tree_->node(items[i]);
    const std::string label = k.kind == PickleKind::kString ? k.text
                              : k.kind == PickleKind::kInt  ? std::to_string(k.integer)
                                                            : "<" + kind_name(*tree_, items[i]) + ">";
    out.emplace_back(PickleRef(*tree_, items[i], file_, path_ + "{key " + label + "}"),
                     PickleRef(*tree_, items[i + 1], file_, path_.empty() ? label : path_ + "." + label));
  }
  return out;
}

std::vector<PickleRef> PickleRef::items() const {
  if (kind() != PickleKind::kList && kind() != PickleKind::kTuple && kind() != PickleKind::kSet)
    fail("is a " + kind_name(*tree_, id_) + ", not a list");
  std::vector<PickleRef> out;
  for (std::size_t i = 0; i < node().items.size(); ++i)
    out.emplace_back(*tree_, node().items[i], file_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

std::int64_t PickleRef::as_int() const {
  if (kind() == PickleKind::kInt) return node().integer;
  if (kind() == PickleKind::kBool) return node().boolean ? 1 : 0;
  fail("is a " + kind_name(*tree_, id_) + ", not an int");
}

double PickleRef::as_double() const {
  if (kind() == PickleKind::kFloat) return node().real;
  if (kind() == PickleKind::kInt) return static_cast<double>(node().integer);
  fail("is a " + kind_name(*tree_, id_) + ", not a number");
}

bool PickleRef::as_bool() const {
  if (kind() == PickleKind::kBool) return node().boolean;
  fail("is a " + kind_name(*tree_, id_) + ", not a bool");
}

const std::string& PickleRef::as_string() const {
  if (kind() != PickleKind::kString) fail("is a " + kind_name(*tree_, id_) + ", not a str");
  return node().text;
}

const TensorRef& PickleRef::as_tensor() const {
  if (kind() != PickleKind::kTensor) fail("is a " + kind_name(*tree_, id_) + ", not a tensor");
  return tree_->tensors()[static_cast<std::size_t>(node().integer)];
}

std::vector<std::int64_t> PickleRef::as_int_list() const {
  std::vector<std::int64_t> out;
  for (const auto& item : items()) out.push_back(item.as_int());
  return out;
}

}  // namespace shardscope::checkpoints
