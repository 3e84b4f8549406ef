// Renaming and tagging a recorded session, and the run rows of a comparison: the command line's
// flags, a model shape that differs (hidden 64 against 128) shown where the config diff is silent.
#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/session_compare.hpp"
#include "sessions/session_labels.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

std::vector<Event> launched_run(const std::string& name, const std::string& hidden) {
  RunStart start = testing::sample_run_start(name, 2, R"({"zero_optimization": {"stage": 2}})");
  start.command_line = {"shardscope", "launch", "--num_procs", "2", "--session", "runs.db", "--", "--config",
                        "ds.json", "--set", "zero_optimization.stage=2", "--model", "gpt2", "--hidden", hidden,
                        "--steps=10", "--activation-checkpointing"};
  std::vector<Event> events{start};
  for (auto& e : testing::sample_steps(2, 3)) events.push_back(e);
  return events;
}

TEST(SessionLabels, RenameAndTagAreTransactionsOnTheStore) {
  const auto path = testing::temp_path("labels");
  {
    Store store = Store::open_or_create(path);
    StoreWriter(store).write("uid-labels-0001", launched_run("first", "64"));
    rename_session(store, 1, "gpt2 hidden 64");
    EXPECT_EQ(load_session(store, 1).info.name, "gpt2 hidden 64");
    EXPECT_EQ(find_session(store, "gpt2 hidden 64"), 1);
    // sample_run_start tags "baseline"; add two, remove it and one never set.
    const auto tags = edit_session_tags(store, 1, {"lr sweep", "zero2"}, {"baseline", "absent"});
    EXPECT_EQ(tags, (std::vector<std::string>{"lr sweep", "zero2"}));
    EXPECT_EQ(load_session(store, 1).info.tags, tags);
    SessionFilter by_tag;
    by_tag.tag = "zero2";
    EXPECT_EQ(list_sessions(store, by_tag).size(), 1u);
    EXPECT_THROW(rename_session(store, 1, "  "), SessionsError);
    EXPECT_THROW(edit_session_tags(store, 1, {"a,b"}, {}), SessionsError);
    EXPECT_THROW(edit_session_tags(store, 1, {" padded"}, {}), SessionsError);
    EXPECT_EQ(load_session(store, 1).info.tags, tags);  // a refused edit wrote nothing
    try {
      rename_session(store, 7, "x");
      FAIL() << "an unknown session must be refused";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    }
  }
  testing::remove_store(path);
}

TEST(SessionCompare, RunDiffShowsTheFlagsThatDiffer) {
  const auto path = testing::temp_path("rundiff");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    writer.write("uid-run-00000a", launched_run("a", "64"));
    writer.write("uid-run-00000b", launched_run("b", "128"));
    const auto leaves = run_leaves(load_session(store, 1));
    auto value = [&](const std::string& path) {
      for (const auto& [p, v] : leaves)
        if (p == path) return v;
      return std::string("(absent)");
    };
    EXPECT_EQ(value("launch.num_procs"), "2");
    EXPECT_EQ(value("train.hidden"), "64");
    EXPECT_EQ(value("train.steps"), "10");
    EXPECT_EQ(value("train.set.zero_optimization.stage"), "2");
    EXPECT_EQ(value("train.activation-checkpointing"), "true");
    EXPECT_EQ(value("ranks"), "2");
    EXPECT_EQ(value("hosts"), "node-a");
    EXPECT_EQ(value("command_line").substr(0, 31), "shardscope launch --num_procs 2");
    // Same config, different model shape: the config diff is empty, the run diff is not.
    const auto c = compare_sessions(store, {1, 2});
    EXPECT_TRUE(c.config_diff.empty());
    ASSERT_EQ(c.run_diff.size(), 2u);  // the command line and train.hidden
    EXPECT_EQ(c.run_diff[0].path, "command_line");
    EXPECT_EQ(c.run_diff[1].path, "train.hidden");
    EXPECT_EQ(*c.run_diff[1].values[1], "128");
  }
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
