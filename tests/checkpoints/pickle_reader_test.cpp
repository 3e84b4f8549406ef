// The pickle reader refuses what torch.load(weights_only=True) refuses, runs nothing, and stays
// linear on hostile input; the writer's output reads back as written.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/pickle_reader.hpp"
#include "checkpoints/pickle_writer.hpp"

namespace shardscope::checkpoints {
namespace {

std::string error_of(const std::string& pickle) {
  try {
    read_pickle(pickle.data(), pickle.size(), "test.pkl");
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kDamaged);
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Pickles spelled opcode by opcode (pickletools' names), so no hex escape runs into the next byte.
const std::string kProto = std::string("\x80") + '\x02';
std::string le(std::uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}
std::string str(const std::string& s) { return "X" + le(s.size(), 4) + s; }
std::string global(const std::string& module, const std::string& name) { return "c" + module + "\n" + name + "\n"; }
std::string byte(unsigned v) { return std::string(1, static_cast<char>(v)); }
const std::string kTuple1 = byte(0x85), kTuple2 = byte(0x86), kNewObj = byte(0x81), kFalse = byte(0x89);
std::string binfloat_one() { return "G" + byte(0x3f) + byte(0xf0) + std::string(6, '\0'); }

TEST(PickleReader, RefusesAGlobalOutsideTheAllowListByName) {
  // os.system('echo pwned') as pickle writes it: the reader stops at the GLOBAL.
  const std::string evil = kProto + global("os", "system") + str("echo pwned") + kTuple1 + "R.";
  const std::string message = error_of(evil);
  EXPECT_TRUE(contains(message, "refuses the global 'os.system'")) << message;
  EXPECT_TRUE(contains(message, "test.pkl")) << message;
  EXPECT_TRUE(contains(error_of(kProto + global("builtins", "eval") + "."), "'builtins.eval'"));
  EXPECT_TRUE(contains(error_of(kProto + global("torch.jit._pickle", "restore_type_tag") + "."),
                       "torch.jit._pickle.restore_type_tag"));
}

TEST(PickleReader, RefusesCallingAValueGlobalAndTheTextProtocol) {
  EXPECT_TRUE(contains(error_of(kProto + global("torch", "Tensor") + ")R."), "not a function"));
  EXPECT_TRUE(contains(error_of(kProto + "I1\n."), "opcode 0x49"));  // INT, protocol 0
  EXPECT_TRUE(contains(error_of(kProto + "(S'x'\ni."), "opcode"));    // STRING / INST
  EXPECT_TRUE(contains(error_of(kProto + "}]a."), "APPEND to a dict"));
}

TEST(PickleReader, BoundsEveryLengthByTheInput) {
  EXPECT_TRUE(contains(error_of(kProto + "X" + le(0x7fffffff, 4) + "abc."), "truncated"));
  EXPECT_TRUE(contains(error_of(kProto + byte(0x8d) + le(0x7fffffffffffffffULL, 8) + "."), "runs past the end"));
  EXPECT_TRUE(contains(error_of(kProto + byte(0x8a) + byte(9) + std::string(9, '\x01') + "."), "does not fit in 64 bits"));
  EXPECT_TRUE(contains(error_of(kProto + "N"), "without STOP"));
  EXPECT_TRUE(contains(error_of(kProto + "h" + byte(5) + "."), "memo entry 5"));
  EXPECT_TRUE(contains(error_of(kProto + "u."), "MARK"));
  // A memo index of 2^32 - 1 is a hash-map key, not an allocation.
  const std::string big_index = kProto + "Nr" + le(0xffffffff, 4) + "j" + le(0xffffffff, 4) + kTuple2 + ".";
  const PickleTree tree = read_pickle(big_index.data(), big_index.size(), "memo.pkl");
  EXPECT_EQ(tree.node(tree.root()).kind, PickleKind::kTuple);
}

TEST(PickleReader, NestingAndCyclesNeitherRecurseNorHang) {
  std::string deep = kProto;
  for (int i = 0; i < 200000; ++i) deep += "]";  // 200,000 nested lists...
  for (int i = 0; i < 199999; ++i) deep += "a";  // ...each appended into the one before
  deep += ".";
  const PickleTree tree = read_pickle(deep.data(), deep.size(), "deep.pkl");
  EXPECT_EQ(tree.node(tree.root()).kind, PickleKind::kList);
  // l = []; l.append(l): a cycle of indices, read and destroyed without recursion.
  const std::string cycle = kProto + "]q" + byte(0) + "h" + byte(0) + "a.";
  const PickleTree c = read_pickle(cycle.data(), cycle.size(), "cycle.pkl");
  ASSERT_EQ(c.node(c.root()).items.size(), 1u);
  EXPECT_EQ(c.node(c.root()).items[0], c.root());
}

TEST(PickleReader, IsLinearInItsInput) {
  // One 1 MB key reused 100,000 times through the memo: hashed once, not 100,000 times.
  std::string p = kProto + "}q" + byte(0) + str(std::string(1 << 20, 'k')) + "q" + byte(1);
  for (int i = 0; i < 100000; ++i) p += "h" + byte(0) + "h" + byte(1) + "Ns0";  // d[key] = None, pop d
  p += "h" + byte(0) + ".";
  const auto start = std::chrono::steady_clock::now();
  const PickleTree tree = read_pickle(p.data(), p.size(), "keys.pkl");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tree.node(tree.root()).items.size(), 2u);  // one key, its value replaced each time
  EXPECT_LT(seconds, 1.0);
}

TEST(PickleReader, ReadsDeepSpeedsClassesAsPlainData) {
  // What DeepSpeed 0.19.7 pickles for the loss scaler and the ZeRO stage (pickletools of a real file).
  const std::string p = kProto + "}(" + str("loss_scaler") + global("deepspeed.runtime.fp16.loss_scaler", "LossScaler") +
                        ")" + kNewObj + "}(" + str("cur_scale") + binfloat_one() + str("dynamic") + kFalse + "ub" +
                        str("zero_stage") + global("deepspeed.runtime.zero.config", "ZeroStageEnum") + "K" + byte(3) +
                        kTuple1 + "R" + str("set") + global("__builtin__", "set") + "]K" + byte(7) + "a" + kTuple1 +
                        "Ru.";
  const PickleTree tree = read_pickle(p.data(), p.size(), "ds.pkl");
  const PickleRef root(tree, tree.root(), "ds.pkl");
  const PickleRef scaler = root["loss_scaler"];
  EXPECT_EQ(scaler.kind(), PickleKind::kObject);
  EXPECT_EQ(scaler.node().text, "deepspeed.runtime.fp16.loss_scaler.LossScaler");
  EXPECT_EQ(PickleRef(tree, scaler.node().state, "ds.pkl")["cur_scale"].as_double(), 1.0);
  EXPECT_EQ(root["zero_stage"].as_int(), 3);
  EXPECT_EQ(root["set"].kind(), PickleKind::kSet);
  EXPECT_EQ(root["set"].items().at(0).as_int(), 7);
  // A missing entry names the file and the path.
  try {
    root["optimizer_state_dict"];
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), "ds.pkl: the top-level value has no 'optimizer_state_dict' entry")) << e.what();
  }
}

TEST(PickleWriter, WritesWhatTheReaderReadsBack) {
  PickleTree t;
  const NodeId root = t.dict();
  t.set_root(root);
  t.dict_set(root, "none", t.none());
  t.dict_set(root, "ints", t.list({t.integer(0), t.integer(255), t.integer(65535), t.integer(-7), t.integer(1LL << 40)}));
  t.dict_set(root, "pi", t.real(3.141592653589793));
  t.dict_set(root, "shape", t.size_tuple({2, 3}));
  t.dict_set(root, "pair", t.tuple({t.boolean(true), t.string("x")}));
  t.dict_set(root, "set", t.set({t.integer(1)}));
  const NodeId ordered = t.dict(/*ordered=*/true);
  for (int i = 0; i < 1500; ++i) t.dict_set(ordered, t.integer(i), t.integer(i * 2));  // two SETITEMS batches
  t.dict_set(root, "ordered", ordered);
  const auto bytes = write_pickle(t);
  const PickleTree back = read_pickle(bytes.data(), bytes.size(), "roundtrip.pkl");
  const PickleRef r(back, back.root(), "roundtrip.pkl");
  EXPECT_TRUE(r["none"].is_none());
  EXPECT_EQ(r["ints"].as_int_list(), (std::vector<std::int64_t>{0, 255, 65535, -7, 1LL << 40}));
  EXPECT_EQ(r["pi"].as_double(), 3.141592653589793);
  EXPECT_EQ(r["shape"].as_int_list(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(r["shape"].node().text, "torch.Size");
  EXPECT_TRUE(r["pair"].at(0).as_bool());
  EXPECT_EQ(r["pair"].at(1).as_string(), "x");
  EXPECT_EQ(r["ordered"].length(), 1500u);
  EXPECT_EQ(r["ordered"][1499].as_int(), 2998);
  EXPECT_TRUE(back.dict_ordered(r["ordered"].id()));
}

TEST(PickleWriter, RefusesObjectsWeightsOnlyWouldRefuse) {
  PickleTree t;
  t.set_root(t.object("collections.defaultdict", t.dict()));
  EXPECT_THROW(write_pickle(t), std::logic_error);
  PickleTree g;
  g.set_root(g.global("os.system"));
  EXPECT_THROW(write_pickle(g), std::logic_error);
}

}  // namespace
}  // namespace shardscope::checkpoints
