#include "checkpoints/pickle_reader.hpp"

#include <cstdio>
#include <cstring>

#include "checkpoints/pickle_reader_impl.hpp"

namespace shardscope::checkpoints {
namespace pickle_detail {

PickleTree Reader::run() {
  while (!stopped_) {
    if (at_ >= size_) fail("the pickle ends without STOP (truncated)");
    op_at_ = at_;
    step(static_cast<unsigned char>(*take(1)));
  }
  return std::move(tree_);
}

NodeId Reader::sized(int length_bytes, PickleKind k) {
  const std::uint64_t length = take_uint(static_cast<std::size_t>(length_bytes));
  if (length > size_ - at_) fail("a value of " + std::to_string(length) + " bytes runs past the end (truncated)");
  PickleNode n;
  n.kind = k;
  const char* p = take(static_cast<std::size_t>(length));
  n.text.assign(p, static_cast<std::size_t>(length));
  return tree_.add(std::move(n));
}

NodeId Reader::signed_long(std::size_t width) {
  if (width > 8) fail("an integer of " + std::to_string(width) + " bytes does not fit in 64 bits");
  const std::uint64_t raw = take_uint(width);
  std::int64_t v = static_cast<std::int64_t>(raw);
  if (width > 0 && width < 8 && (raw >> (8 * width - 1)) & 1) v = static_cast<std::int64_t>(raw | (~0ULL << (8 * width)));
  return tree_.integer(v);
}

void Reader::step(unsigned char op) {
  switch (op) {
    case kProto: take(1); return;
    case kFrame: take(8); return;
    case kStop: tree_.set_root(pop()); stopped_ = true; return;
    case kMark: marks_.push_back(stack_.size()); return;
    case kPop: pop(); return;
    case kPopMark: pop_mark(); return;
    case kDup: push(top()); return;
    case kNone: push(tree_.none()); return;
    case kNewTrue: push(tree_.boolean(true)); return;
    case kNewFalse: push(tree_.boolean(false)); return;
    case kBinInt: push(signed_long(4)); return;
    case kBinInt1: push(tree_.integer(static_cast<std::int64_t>(take_uint(1)))); return;
    case kBinInt2: push(tree_.integer(static_cast<std::int64_t>(take_uint(2)))); return;
    case kLong1: push(signed_long(static_cast<std::size_t>(take_uint(1)))); return;
    case kLong4: push(signed_long(static_cast<std::size_t>(take_uint(4)))); return;
    case kBinFloat: {
      std::uint64_t bits = 0;
      const auto* p = reinterpret_cast<const unsigned char*>(take(8));
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];  // big-endian
      double v;
      std::memcpy(&v, &bits, 8);
      push(tree_.real(v));
      return;
    }
    // strings and bytes, after a 1-, 4- or 8-byte length (SHORT_BINSTRING and BINSTRING are
    // Python 2's str, read as text, as torch.load reads them with encoding='utf-8')
    case kShortBinUnicode:
    case kShortBinString: push(sized(1, PickleKind::kString)); return;
    case kBinUnicode:
    case kBinString: push(sized(4, PickleKind::kString)); return;
    case kBinUnicode8: push(sized(8, PickleKind::kString)); return;
    case kShortBinBytes: push(sized(1, PickleKind::kBytes)); return;
    case kBinBytes: push(sized(4, PickleKind::kBytes)); return;
    case kBinBytes8: push(sized(8, PickleKind::kBytes)); return;
    case kEmptyList: push(tree_.list()); return;
    case kEmptyTuple: push(tree_.tuple()); return;
    case kEmptyDict: push(tree_.dict()); return;
    case kEmptySet: push(tree_.set()); return;
    case kList: push(tree_.list(pop_mark())); return;
    case kTuple: push(tree_.tuple(pop_mark())); return;
    case kFrozenSet: push(tree_.set(pop_mark())); return;
    case kDict: {
      const auto items = pop_mark();
      const NodeId d = tree_.dict();
      set_items(d, items);
      push(d);
      return;
    }
    case kTuple1: { const NodeId a = pop(); push(tree_.tuple({a})); return; }
    case kTuple2: { const NodeId b = pop(), a = pop(); push(tree_.tuple({a, b})); return; }
    case kTuple3: { const NodeId c = pop(), b = pop(), a = pop(); push(tree_.tuple({a, b, c})); return; }
    case kAppend: { const NodeId v = pop(); append_items(top(), {v}); return; }
    case kAppends: { const auto items = pop_mark(); append_items(top(), items); return; }
    case kAddItems: {
      const auto items = pop_mark();
      if (kind(top()) != PickleKind::kSet) fail("ADDITEMS on a " + kind_name(tree_, top()) + ", not a set");
      auto& set = tree_.node(top()).items;
      set.insert(set.end(), items.begin(), items.end());
      return;
    }
    case kSetItem: { const NodeId v = pop(), k = pop(); set_items(top(), {k, v}); return; }
    case kSetItems: { const auto items = pop_mark(); set_items(top(), items); return; }
    case kBinPut: memo_[take_uint(1)] = top(); return;
    case kLongBinPut: memo_[take_uint(4)] = top(); return;
    case kMemoize: memo_[memo_.size()] = top(); return;
    case kBinGet:
    case kLongBinGet: {
      const std::uint64_t index = take_uint(op == kBinGet ? 1 : 4);
      auto it = memo_.find(index);
      if (it == memo_.end()) fail("the pickle reads memo entry " + std::to_string(index) + ", which it never stored");
      push(it->second);
      return;
    }
    case kGlobal: {
      const std::string module = take_line(), name = take_line();
      global(module, name);
      return;
    }
    case kStackGlobal: {
      const NodeId name = pop(), module = pop();
      if (kind(name) != PickleKind::kString || kind(module) != PickleKind::kString) fail("STACK_GLOBAL needs two strings");
      global(node(module).text, node(name).text);
      return;
    }
    case kBinPersId: persistent_load(); return;
    case kReduce: reduce(); return;
    case kNewObj: new_object(); return;
    case kBuild: build(); return;
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      fail(std::string("opcode ") + hex + " is not one torch.save writes (text-protocol and object opcodes are refused)");
    }
  }
}

}  // namespace pickle_detail

PickleTree read_pickle(const char* data, std::size_t size, const std::string& file) {
  return pickle_detail::Reader(data, size, file).run();
}

}  // namespace shardscope::checkpoints
