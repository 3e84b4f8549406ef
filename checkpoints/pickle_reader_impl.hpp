#pragma once
// Internal to the pickle reader (pickle_reader.cpp: the opcode loop; pickle_reader_calls.cpp:
// GLOBAL, REDUCE, NEWOBJ, BUILD and persistent ids). Not included anywhere else.

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/pickle_tree.hpp"

namespace shardscope::checkpoints::pickle_detail {

// Opcodes (pickletools' names).
enum : unsigned char {
  kMark = '(', kStop = '.', kPop = '0', kPopMark = '1', kDup = '2', kBinInt = 'J', kBinInt1 = 'K', kBinInt2 = 'M',
  kNone = 'N', kBinPersId = 'Q', kReduce = 'R', kBinString = 'T', kShortBinString = 'U', kBinUnicode = 'X',
  kAppend = 'a', kBuild = 'b', kGlobal = 'c', kDict = 'd', kEmptyDict = '}', kAppends = 'e', kBinGet = 'h',
  kLongBinGet = 'j', kList = 'l', kEmptyList = ']', kBinPut = 'q', kLongBinPut = 'r', kSetItem = 's',
  kTuple = 't', kEmptyTuple = ')', kSetItems = 'u', kBinFloat = 'G', kProto = 0x80, kNewObj = 0x81,
  kTuple1 = 0x85, kTuple2 = 0x86, kTuple3 = 0x87, kNewTrue = 0x88, kNewFalse = 0x89, kLong1 = 0x8a, kLong4 = 0x8b,
  kBinBytes = 'B', kShortBinBytes = 'C', kShortBinUnicode = 0x8c, kBinUnicode8 = 0x8d, kBinBytes8 = 0x8e,
  kEmptySet = 0x8f, kAddItems = 0x90, kFrozenSet = 0x91, kStackGlobal = 0x93, kMemoize = 0x94, kFrame = 0x95,
};

class Reader {
 public:
  Reader(const char* data, std::size_t size, std::string file) : data_(data), size_(size), file_(std::move(file)) {}
  PickleTree run();

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw damaged(file_, "pickle byte " + std::to_string(op_at_) + ": " + what);
  }
  const char* take(std::size_t n) {
    if (n > size_ - at_) fail("the pickle ends in the middle of a value (truncated)");
    const char* p = data_ + at_;
    at_ += n;
    return p;
  }
  std::uint64_t take_uint(std::size_t n) {
    const auto* p = reinterpret_cast<const unsigned char*>(take(n));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
  }
  std::string take_line() {
    const void* nl = std::memchr(data_ + at_, '\n', size_ - at_);
    if (!nl) fail("a GLOBAL name is not terminated");
    const std::size_t n = static_cast<std::size_t>(static_cast<const char*>(nl) - (data_ + at_));
    std::string line(data_ + at_, n);
    at_ += n + 1;
    return line;
  }
  void push(NodeId id) { stack_.push_back(id); }
  NodeId pop() {
    if (stack_.size() <= floor()) fail("the pickle pops an empty stack");
    const NodeId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  NodeId& top() {
    if (stack_.size() <= floor()) fail("the pickle reads an empty stack");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<NodeId> pop_mark() {
    if (marks_.empty()) fail("the pickle closes a MARK it never opened");
    std::vector<NodeId> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  const PickleNode& node(NodeId id) const { return tree_.node(id); }
  PickleKind kind(NodeId id) const { return tree_.node(id).kind; }

  void step(unsigned char op);
  void global(const std::string& module, const std::string& name);
  void persistent_load();
  void reduce();
  void new_object();
  void build();
  void append_items(NodeId list, const std::vector<NodeId>& items);
  void set_items(NodeId dict, const std::vector<NodeId>& items);
  NodeId call(const std::string& function, const std::vector<NodeId>& args);
  NodeId rebuild_tensor(const std::string& function, const std::vector<NodeId>& args);
  NodeId signed_long(std::size_t width);
  /// A str or bytes value after its `length_bytes`-byte little-endian length.
  NodeId sized(int length_bytes, PickleKind k);

  const char* data_;
  std::size_t size_, at_ = 0, op_at_ = 0;
  std::string file_;
  PickleTree tree_;
  std::vector<NodeId> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, NodeId> memo_;
  std::map<std::string, std::uint32_t> storage_by_key_;
  bool stopped_ = false;
};

}  // namespace shardscope::checkpoints::pickle_detail
