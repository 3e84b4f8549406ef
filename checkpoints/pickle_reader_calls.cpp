// The pickle reader's interpretation of globals and calls: only the allow-list of
// pickle_reader.hpp is built, everything else is refused by name.
#include <cstdio>

#include "checkpoints/pickle_reader_impl.hpp"
#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints::pickle_detail {
namespace {

const std::set<std::string>& allowed_globals() {
  static const std::set<std::string> names = [] {
    std::set<std::string> s = {
        "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.frozenset",
        "builtins.bytearray", "_codecs.encode", "torch.Size", "torch.Tensor", "torch.nn.parameter.Parameter",
        "torch.device", "torch.UntypedStorage", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor",
        "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
        "torch._tensor._rebuild_from_type_v2", "deepspeed.runtime.fp16.loss_scaler.LossScaler",
        "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler", "deepspeed.runtime.zero.config.ZeroStageEnum",
        "deepspeed.utils.tensor_fragment.fragment_address"};
    for (const char* storage : {"DoubleStorage", "FloatStorage", "HalfStorage", "BFloat16Storage", "LongStorage",
                                "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage"})
      s.insert(std::string("torch.") + storage);
    for (const char* dtype : {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                              "uint8", "bool"})
      s.insert(std::string("torch.") + dtype);
    return s;
  }();
  return names;
}

// The DeepSpeed classes a checkpoint instantiates with NEWOBJ; read as their attribute dict.
bool is_plain_data_class(const std::string& name) {
  return name == "deepspeed.runtime.fp16.loss_scaler.LossScaler" ||
         name == "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler" ||
         name == "deepspeed.utils.tensor_fragment.fragment_address";
}

bool is_tensor_rebuild(const std::string& name) {
  return name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor" ||
         name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state";
}

// pickle's fix_imports for protocol 2 (Python 2 module names).
std::string python3_module(const std::string& module) {
  if (module == "__builtin__") return "builtins";
  if (module == "copy_reg") return "copyreg";
  return module;
}

}  // namespace

void Reader::global(const std::string& module, const std::string& name) {
  const std::string full = python3_module(module) + "." + name;
  if (!allowed_globals().count(full))
    fail("refuses the global '" + printable(full, 120) +
         "': this reader builds only tensors, containers, numbers, strings and DeepSpeed's LossScaler, "
         "ZeroStageEnum and fragment_address, and runs no code (the file was written by other code, or is "
         "not a checkpoint)");
  push(tree_.global(full));
}

void Reader::append_items(NodeId list, const std::vector<NodeId>& items) {
  if (kind(list) != PickleKind::kList) fail("APPEND to a " + kind_name(tree_, list) + ", not a list");
  auto& v = tree_.node(list).items;
  v.insert(v.end(), items.begin(), items.end());
}

void Reader::set_items(NodeId dict, const std::vector<NodeId>& items) {
  if (kind(dict) != PickleKind::kDict) fail("SETITEM on a " + kind_name(tree_, dict) + ", not a dict");
  if (items.size() % 2 != 0) fail("SETITEMS with an odd number of values");
  for (std::size_t i = 0; i < items.size(); i += 2) tree_.dict_set(dict, items[i], items[i + 1]);
}

// ('storage', torch.<Type>Storage, key, location, numel): torch.save's persistent id of a storage.
void Reader::persistent_load() {
  const NodeId pid = pop();
  const std::vector<NodeId> t = node(pid).items;  // a copy: the arena grows below
  if (kind(pid) != PickleKind::kTuple || t.size() < 5 || kind(t[0]) != PickleKind::kString ||
      node(t[0]).text != "storage")
    fail("a persistent id that is not ('storage', type, key, location, numel)");
  if (kind(t[1]) != PickleKind::kGlobal || kind(t[2]) != PickleKind::kString || kind(t[3]) != PickleKind::kString ||
      kind(t[4]) != PickleKind::kInt)
    fail("a storage persistent id with values of the wrong types");
  const std::string cls = node(t[1]).text;
  StorageRef s;
  if (cls == "torch.UntypedStorage") {
    s.dtype = DType::kUInt8;
  } else {
    const auto dtype = cls.rfind("torch.", 0) == 0 ? dtype_of_storage_class(cls.substr(6)) : std::nullopt;
    if (!dtype) fail("a storage of unknown type '" + cls + "'");
    s.dtype = *dtype;
  }
  s.key = node(t[2]).text;
  s.location = node(t[3]).text;
  s.numel = node(t[4]).integer;
  if (s.numel < 0) fail("a storage of negative size");
  auto it = storage_by_key_.find(s.key);
  if (it != storage_by_key_.end()) {
    const StorageRef& known = tree_.storages()[it->second];
    if (known.dtype != s.dtype || known.numel != s.numel)
      fail("storage '" + printable(s.key) + "' is described twice with different types or sizes");
    push(tree_.storage(it->second));
    return;
  }
  const std::uint32_t index = tree_.add_storage(s);
  storage_by_key_.emplace(s.key, index);
  push(tree_.storage(index));
}

void Reader::reduce() {
  const NodeId args = pop();
  const NodeId function = pop();
  if (kind(function) != PickleKind::kGlobal) fail("REDUCE calls a " + kind_name(tree_, function) + ", not an allowed function");
  if (kind(args) != PickleKind::kTuple) fail("REDUCE with arguments that are not a tuple");
  // Copies: building the result adds nodes, which may move the arena the references point into.
  const std::string name = node(function).text;
  const std::vector<NodeId> arguments = node(args).items;
  push(call(name, arguments));
}

NodeId Reader::call(const std::string& f, const std::vector<NodeId>& args) {
  const auto arity = [&](std::size_t lo, std::size_t hi) {
    if (args.size() < lo || args.size() > hi) fail(f + " called with " + std::to_string(args.size()) + " arguments");
  };
  if (f == "collections.OrderedDict" || f == "collections.Counter") {
    arity(0, 1);
    const NodeId d = tree_.dict(f == "collections.OrderedDict");
    if (!args.empty()) {
      if (kind(args[0]) == PickleKind::kDict) {
        set_items(d, node(args[0]).items);
      } else if (kind(args[0]) == PickleKind::kList) {
        for (NodeId pair : node(args[0]).items) {
          if (kind(pair) != PickleKind::kTuple || node(pair).items.size() != 2) fail(f + " of items that are not pairs");
          set_items(d, node(pair).items);
        }
      } else {
        fail(f + " of a " + kind_name(tree_, args[0]));
      }
    }
    return d;
  }
  if (f == "builtins.set" || f == "builtins.frozenset") {
    arity(0, 1);
    if (args.empty()) return tree_.set();
    const PickleKind k = kind(args[0]);
    if (k != PickleKind::kList && k != PickleKind::kTuple && k != PickleKind::kSet) fail(f + " of a " + kind_name(tree_, args[0]));
    return tree_.set(node(args[0]).items);
  }
  if (f == "torch.Size") {
    arity(1, 1);
    if (kind(args[0]) != PickleKind::kTuple && kind(args[0]) != PickleKind::kList) fail("torch.Size of a " + kind_name(tree_, args[0]));
    for (NodeId d : node(args[0]).items)
      if (kind(d) != PickleKind::kInt) fail("torch.Size with a dimension that is not an int");
    const NodeId t = tree_.tuple(node(args[0]).items);
    tree_.node(t).text = "torch.Size";
    return t;
  }
  if (f == "torch.device") {
    arity(1, 2);
    if (kind(args[0]) != PickleKind::kString) fail("torch.device of a " + kind_name(tree_, args[0]));
    std::string name = node(args[0]).text;
    if (args.size() == 2 && kind(args[1]) == PickleKind::kInt) name += ":" + std::to_string(node(args[1]).integer);
    return tree_.string(name);
  }
  if (f == "_codecs.encode") {  // protocol 2's bytes: encode(str, 'latin1')
    arity(1, 2);
    if (kind(args[0]) != PickleKind::kString) fail("_codecs.encode of a " + kind_name(tree_, args[0]));
    PickleNode n;
    n.kind = PickleKind::kBytes;
    const std::string& s = node(args[0]).text;  // UTF-8 of code points below 256
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        n.text += static_cast<char>(c);
      } else if ((c == 0xC2 || c == 0xC3) && i + 1 < s.size()) {
        n.text += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F));
      } else {
        fail("_codecs.encode of a string with characters beyond latin-1");
      }
    }
    return tree_.add(std::move(n));
  }
  if (f == "builtins.bytearray") {
    arity(0, 1);
    PickleNode n;
    n.kind = PickleKind::kBytes;
    if (!args.empty()) {
      if (kind(args[0]) != PickleKind::kBytes) fail("bytearray of a " + kind_name(tree_, args[0]));
      n.text = node(args[0]).text;
    }
    return tree_.add(std::move(n));
  }
  if (f == "deepspeed.runtime.zero.config.ZeroStageEnum") {
    arity(1, 1);
    if (kind(args[0]) != PickleKind::kInt) fail("ZeroStageEnum of a " + kind_name(tree_, args[0]));
    const NodeId v = tree_.integer(node(args[0]).integer);
    tree_.node(v).text = "ZeroStageEnum";
    return v;
  }
  if (is_tensor_rebuild(f)) return rebuild_tensor(f, args);
  if (f == "torch._tensor._rebuild_from_type_v2") {
    arity(4, 4);
    if (kind(args[0]) != PickleKind::kGlobal || !is_tensor_rebuild(node(args[0]).text))
      fail("_rebuild_from_type_v2 with a function that does not rebuild a tensor");
    if (kind(args[1]) != PickleKind::kGlobal ||
        (node(args[1]).text != "torch.Tensor" && node(args[1]).text != "torch.nn.parameter.Parameter"))
      fail("_rebuild_from_type_v2 of a type other than torch.Tensor or Parameter");
    if (kind(args[2]) != PickleKind::kTuple) fail("_rebuild_from_type_v2 with arguments that are not a tuple");
    const std::string function = node(args[0]).text;
    const std::vector<NodeId> arguments = node(args[2]).items;
    return rebuild_tensor(function, arguments);  // the attribute dict is not kept
  }
  fail("calls '" + f + "', which is not a function (REDUCE of a type that is only a value)");
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) and kin.
NodeId Reader::rebuild_tensor(const std::string& f, const std::vector<NodeId>& args) {
  if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state") {
    if (args.size() < 2 || kind(args[0]) != PickleKind::kTensor) fail(f + " of something that is not a tensor");
    return args[0];
  }
  if (args.size() < 4 || args.size() > 7) fail(f + " called with " + std::to_string(args.size()) + " arguments");
  if (kind(args[0]) != PickleKind::kStorage) fail(f + " of a " + kind_name(tree_, args[0]) + ", not a storage");
  TensorRef t;
  t.storage = static_cast<std::uint32_t>(node(args[0]).integer);
  if (kind(args[1]) != PickleKind::kInt) fail(f + " with a storage offset that is not an int");
  t.offset = node(args[1]).integer;
  for (int which : {2, 3}) {
    const NodeId dims = args[static_cast<std::size_t>(which)];
    if (kind(dims) != PickleKind::kTuple) fail(f + " with a size or stride that is not a tuple");
    for (NodeId d : node(dims).items) {
      if (kind(d) != PickleKind::kInt) fail(f + " with a dimension that is not an int");
      (which == 2 ? t.shape : t.strides).push_back(node(d).integer);
    }
  }
  if (t.shape.size() != t.strides.size()) fail(f + " with " + std::to_string(t.shape.size()) + " sizes and " +
                                               std::to_string(t.strides.size()) + " strides");
  if (args.size() > 4 && kind(args[4]) == PickleKind::kBool) t.requires_grad = node(args[4]).boolean;
  return tree_.tensor(std::move(t));
}

void Reader::new_object() {
  const NodeId args = pop();
  const NodeId cls = pop();
  if (kind(cls) != PickleKind::kGlobal) fail("NEWOBJ of a " + kind_name(tree_, cls) + ", not a class");
  const std::string name = node(cls).text;
  if (kind(args) != PickleKind::kTuple) fail("NEWOBJ with arguments that are not a tuple");
  if (name == "torch.nn.parameter.Parameter") {
    if (node(args).items.empty() || kind(node(args).items[0]) != PickleKind::kTensor) fail("Parameter of something that is not a tensor");
    push(node(args).items[0]);
    return;
  }
  if (!is_plain_data_class(name)) fail("NEWOBJ of '" + name + "', which this reader does not build");
  push(tree_.object(name, 0));
}

void Reader::build() {
  const NodeId state = pop();
  const NodeId target = top();
  switch (kind(target)) {
    case PickleKind::kObject: {
      NodeId attributes = state;
      // (dict, slots) as object.__reduce_ex__ gives it for classes with __slots__.
      if (kind(state) == PickleKind::kTuple && node(state).items.size() == 2) attributes = node(state).items[0];
      if (kind(attributes) != PickleKind::kDict && kind(attributes) != PickleKind::kNone)
        fail("BUILD of a " + node(target).text + " from a " + kind_name(tree_, attributes));
      tree_.node(target).state = attributes;
      return;
    }
    case PickleKind::kDict: return;  // attributes of an OrderedDict instance: weights_only keeps them, we need none
    default: fail("BUILD of a " + kind_name(tree_, target) + " (only DeepSpeed's plain-data classes are built)");
  }
}

}  // namespace shardscope::checkpoints::pickle_detail
