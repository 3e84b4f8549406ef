#include "checkpoints/pickle_writer.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace shardscope::checkpoints {
namespace {

constexpr std::size_t kBatch = 1000;  // items per APPENDS/SETITEMS, as Python's pickler batches
constexpr int kMaxDepth = 512;        // trees written here are built by ShardScope: a few levels

class Writer {
 public:
  explicit Writer(const PickleTree& tree) : tree_(tree) {}
  std::vector<char> run() {
    out_.push_back(static_cast<char>(0x80));
    out_.push_back(2);
    value(tree_.root(), 0);
    out_.push_back('.');
    return std::move(out_);
  }

 private:
  void op(char c) { out_.push_back(c); }
  void raw(const void* p, std::size_t n) {
    const auto* c = static_cast<const char*>(p);
    out_.insert(out_.end(), c, c + n);
  }
  void le(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  void global(const char* module, const char* name) {
    op('c');
    raw(module, std::strlen(module));
    op('\n');
    raw(name, std::strlen(name));
    op('\n');
  }
  void integer(std::int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      le(static_cast<std::uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op('M');
      le(static_cast<std::uint64_t>(v), 2);
    } else if (v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max()) {
      op('J');
      le(static_cast<std::uint64_t>(static_cast<std::uint32_t>(static_cast<std::int32_t>(v))), 4);
    } else {
      op(static_cast<char>(0x8a));  // LONG1, 8 bytes two's complement
      out_.push_back(8);
      le(static_cast<std::uint64_t>(v), 8);
    }
  }
  void string(const std::string& s) {
    op('X');
    le(s.size(), 4);
    raw(s.data(), s.size());
  }
  void real(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
  void bytes(const std::string& b) {  // protocol 2 has no bytes opcode: _codecs.encode(latin-1 text, 'latin1')
    global("_codecs", "encode");
    std::string text;
    for (unsigned char c : b) {
      if (c < 0x80) {
        text += static_cast<char>(c);
      } else {
        text += static_cast<char>(0xC0 | (c >> 6));
        text += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    string(text);
    string("latin1");
    op(static_cast<char>(0x86));
    op('R');
  }
  void items(const std::vector<NodeId>& ids, char closing, int depth) {
    for (std::size_t i = 0; i < ids.size(); i += kBatch) {
      op('(');
      for (std::size_t j = i; j < ids.size() && j < i + kBatch; ++j) value(ids[j], depth + 1);
      op(closing);
    }
  }
  void tuple(const std::vector<NodeId>& ids, int depth) {
    if (ids.empty()) return op(')');
    if (ids.size() <= 3) {
      for (NodeId id : ids) value(id, depth + 1);
      return op(static_cast<char>(0x84 + ids.size()));  // TUPLE1..3
    }
    op('(');
    for (NodeId id : ids) value(id, depth + 1);
    op('t');
  }
  void tensor(const TensorRef& t) {
    const StorageRef& s = tree_.storages().at(t.storage);
    global("torch._utils", "_rebuild_tensor_v2");
    op('(');
    op('(');
    string("storage");
    global("torch", storage_class_name(s.dtype));
    string(s.key);
    string(s.location.empty() ? "cpu" : s.location);
    integer(s.numel);
    op('t');
    op('Q');  // BINPERSID
    integer(t.offset);
    int_tuple(t.shape);
    int_tuple(t.strides);
    op(t.requires_grad ? static_cast<char>(0x88) : static_cast<char>(0x89));
    global("collections", "OrderedDict");  // backward hooks: none
    op(')');
    op('R');
    op('t');
    op('R');
  }
  void int_tuple(const std::vector<std::int64_t>& dims) {
    if (dims.empty()) return op(')');
    op('(');
    for (auto d : dims) integer(d);
    op('t');
  }
  // DeepSpeed's loss scaler classes, opt-in (deepspeed_checkpoint_writer.hpp): NEWOBJ of the
  // class with no arguments, then BUILD from the attribute dict, as pickle writes any object.
  void object(NodeId id, const PickleNode& n, int depth) {
    const auto dot = n.text.rfind('.');
    if (n.text != "deepspeed.runtime.fp16.loss_scaler.LossScaler" &&
        n.text != "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler")
      throw std::logic_error("write_pickle: objects of " + kind_name(tree_, id) + " are not written");
    global(n.text.substr(0, dot).c_str(), n.text.substr(dot + 1).c_str());
    op(')');
    op(static_cast<char>(0x81));  // NEWOBJ
    value(n.state, depth + 1);
    op('b');
  }
  // torch dtypes (torch.float16), which weights_only accepts.
  void dtype_global(const std::string& name) {
    if (name.rfind("torch.", 0) != 0 || name.find('.', 6) != std::string::npos)
      throw std::logic_error("write_pickle: the global " + name + " is not written");
    global("torch", name.substr(6).c_str());
  }
  void value(NodeId id, int depth) {
    if (depth > kMaxDepth) throw std::logic_error("write_pickle: the tree nests deeper than " + std::to_string(kMaxDepth));
    const PickleNode& n = tree_.node(id);
    switch (n.kind) {
      case PickleKind::kNone: return op('N');
      case PickleKind::kBool: return op(n.boolean ? static_cast<char>(0x88) : static_cast<char>(0x89));
      case PickleKind::kInt: return integer(n.integer);
      case PickleKind::kFloat: return real(n.real);
      case PickleKind::kString: return string(n.text);
      case PickleKind::kBytes: return bytes(n.text);
      case PickleKind::kList:
        op(']');
        return items(n.items, 'e', depth);
      case PickleKind::kTuple:
        if (n.text != "torch.Size") return tuple(n.items, depth);
        global("torch", "Size");
        tuple(n.items, depth);
        op(static_cast<char>(0x85));
        return op('R');
      case PickleKind::kDict:
        if (tree_.dict_ordered(id)) {
          global("collections", "OrderedDict");
          op(')');
          op('R');
        } else {
          op('}');
        }
        return items(n.items, 'u', depth);
      case PickleKind::kSet:
        global("__builtin__", "set");
        op(']');
        items(n.items, 'e', depth);
        op(static_cast<char>(0x85));
        return op('R');
      case PickleKind::kTensor: return tensor(tree_.tensors().at(static_cast<std::size_t>(n.integer)));
      case PickleKind::kObject: return object(id, n, depth);
      case PickleKind::kGlobal: return dtype_global(n.text);
      case PickleKind::kStorage:
        throw std::logic_error("write_pickle: a storage is written only as a tensor's persistent id");
    }
  }

  const PickleTree& tree_;
  std::vector<char> out_;
};

}  // namespace

std::vector<char> write_pickle(const PickleTree& tree) { return Writer(tree).run(); }

}  // namespace shardscope::checkpoints
