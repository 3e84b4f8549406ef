// Following a live run: csv_monitor files that grow between polls (a row half written), output
// lines as they come, every changed step sent again with everything known about it.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sessions/import/run_follower.hpp"
#include <nlohmann/json.hpp>

#include "configs/input_file.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/watch_plan.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

namespace fs = std::filesystem;

class CollectingSink : public EventSink {
 public:
  void send(const Event& e) override { events.push_back(e); }
  void flush() override {}
  void close() override {}
  std::vector<StepMetrics> steps() const {
    std::vector<StepMetrics> out;
    for (const auto& e : events)
      if (const auto* m = std::get_if<StepMetrics>(&e)) out.push_back(*m);
    return out;
  }
  std::vector<Event> events;
};

void append(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

TEST(RunFollower, ReadsGrowingCsvFilesAndMergesTheLog) {
  const fs::path dir = fs::path(testing::temp_path("follow")) / "job";
  fs::create_directories(dir);
  CollectingSink sink;
  DeepSpeedRunFollower follower(sink, {dir.string(), 8});
  EXPECT_EQ(follower.poll(), 0u);  // nothing written yet
  append(dir / "Train_Samples_lr.csv", "step,l");
  EXPECT_EQ(follower.poll(), 0u);  // the header is not complete
  append(dir / "Train_Samples_lr.csv", "r\r\n8,0.5\r\n16,0.2");
  EXPECT_EQ(follower.poll(), 1u);  // "16,0.2" may still be mid-write
  // DeepSpeed wrote the rate after step 1's scheduler step: step 2's, held until step 2 has run.
  EXPECT_TRUE(sink.steps().empty());
  append(dir / "Train_Samples_lr.csv", "5\r\n");
  EXPECT_EQ(follower.poll(), 1u);
  ASSERT_EQ(sink.steps().size(), 1u);  // step 3's rate shows that step 2 ran
  EXPECT_EQ(sink.steps()[0].step, 2);
  EXPECT_EQ(*sink.steps()[0].lr, 0.5);
  follower.on_output_line("[2026-01-01 10:00:00,000] [INFO] [timer.py:264:stop] epoch=0/micro_step=2/global_step=2, "
                          "RunningAvgSamplesPerSec=10, CurrSamplesPerSec=12.5, MemAllocated=1.0GB, MaxMemAllocated=2.0GB");
  follower.on_output_line("[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | step: 3.00");
  const auto step2 = sink.steps().back();
  EXPECT_EQ(step2.step, 2);
  EXPECT_EQ(*step2.lr, 0.5);               // from the csv
  EXPECT_EQ(*step2.samples_per_s, 12.5);   // from the log
  EXPECT_EQ(*step2.step_time_ms, 6.0);
  append(dir / "Train_Samples_lr.csv", "24,0.125");  // no newline: the run ended mid-line
  follower.finish();
  EXPECT_EQ(sink.steps().back().step, 3);
  EXPECT_EQ(*sink.steps().back().lr, 0.25);
  for (const auto& m : sink.steps()) EXPECT_LT(m.step, 4) << "the rate written after the last step is no step's";
  EXPECT_EQ(follower.points_read(), 3u);
}

TEST(WatchPlan, LauncherFlags0198RemovedAreFoundBeforeTheScript) {
  using configs::DeepSpeedVersion;
  const std::vector<std::string> elastic = {"deepspeed", "--num_gpus", "2", "--elastic_training", "--max_elastic_nodes=4",
                                            "train.py", "--min_elastic_nodes", "1"};
  EXPECT_EQ(removed_launcher_flags(elastic, DeepSpeedVersion::k0_19_8),
            (std::vector<std::string>{"--elastic_training", "--max_elastic_nodes"}));  // the script's own flags are its
  EXPECT_TRUE(removed_launcher_flags(elastic, DeepSpeedVersion::k0_19_7).empty());
  EXPECT_TRUE(removed_launcher_flags({"torchrun", "--elastic_training", "t.py"}, DeepSpeedVersion::k0_19_8).empty());
  EXPECT_TRUE(removed_launcher_flags({"deepspeed", "--no_ssh", "train.py", "--elastic_training"},
                                     DeepSpeedVersion::k0_19_8).empty());
}

TEST(WatchPlan, FindsTheConfigArgumentAndWritesACopyWithCsvMonitor) {
  const fs::path dir = testing::temp_path("plan");
  fs::create_directories(dir);
  const auto user_config = (dir / "ds.json").string();
  std::ofstream(user_config) << "{\n  // hjson comment\n  \"train_batch_size\": 16, \"zero_optimization\": {\"stage\": 2},\n}\n";
  const std::string before = testing::read_bytes(user_config);
  const auto plan = plan_watch({"deepspeed", "train.py", "--deepspeed", "--deepspeed_config", user_config, "--lr", "1"},
                               (dir / "out").string());
  EXPECT_EQ(plan.config_argument, 4u);
  EXPECT_EQ(plan.command[4], plan.config_copy);
  EXPECT_EQ(plan.command[2], "--deepspeed");  // DeepSpeed's on/off flag stays
  EXPECT_EQ(plan.train_batch_size, 16);
  EXPECT_EQ(testing::read_bytes(user_config), before);  // the user's file is never written
  const auto copy = nlohmann::json::parse(testing::read_bytes(plan.config_copy));
  EXPECT_EQ(copy["csv_monitor"]["enabled"], true);
  EXPECT_EQ(copy["csv_monitor"]["output_path"].get<std::string>() + "/" + copy["csv_monitor"]["job_name"].get<std::string>(),
            plan.csv_dir);
  EXPECT_EQ(copy["zero_optimization"]["stage"], 2);
  const auto hf = plan_watch({"torchrun", "--nproc_per_node=2", "run.py", "--deepspeed=" + user_config}, (dir / "o2").string());
  EXPECT_EQ(hf.command[3], "--deepspeed=" + hf.config_copy);
  const auto bare = find_config_argument({"python", "train.py", user_config});
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->first, 2u);
  EXPECT_FALSE(find_config_argument({"python", "train.py", "--epochs", "3"}));
}

std::string plan_error(const std::vector<std::string>& command, const fs::path& out_dir) {
  try {
    plan_watch(command, out_dir.string());
  } catch (const ImportError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(WatchPlan, ReadsTheConfigAsConfigsAreReadAndNamesItWhenItCannot) {
  const fs::path dir = testing::temp_path("plan_bounds");
  fs::create_directories(dir);
  const auto big = (dir / "huge.json").string();
  std::ofstream(big) << "{\"train_batch_size\": 16}";
  fs::resize_file(big, configs::kMaxConfigFileBytes + 1);  // sparse: no 16 MiB written
  const std::string too_large = plan_error({"deepspeed", "train.py", "--deepspeed", big}, dir / "out");
  EXPECT_NE(too_large.find(big + ": "), std::string::npos) << too_large;
  EXPECT_NE(too_large.find("more than a JSON config file may hold (16.7 MB"), std::string::npos) << too_large;
  // Found by its .json name alone, a file that large is a data file, not the config.
  EXPECT_FALSE(find_config_argument({"python", "train.py", big}));
  const auto missing = (dir / "missing.json").string();
  const std::string unreadable = plan_error({"deepspeed", "train.py", "--deepspeed_config", missing}, dir / "out");
  EXPECT_NE(unreadable.find(missing), std::string::npos) << unreadable;
  const std::string folder = plan_error({"deepspeed", "train.py", "--deepspeed_config", dir.string()}, dir / "out");
  EXPECT_NE(folder.find("a directory"), std::string::npos) << folder;
  EXPECT_FALSE(fs::exists(dir / "out" / "ds_config.json")) << "no copy of a config that was not read";
}

// The copy is written as every file the library writes (AtomicOutput): a link at its path is
// refused, not followed onto the file it points at, and no temporary is left behind.
TEST(WatchPlan, RefusesToReplaceALinkWithTheConfigCopy) {
  const fs::path dir = testing::temp_path("plan_link");
  fs::create_directories(dir / "out");
  const auto user_config = (dir / "ds.json").string();
  std::ofstream(user_config) << "{\"train_batch_size\": 16}";
  const auto kept = (dir / "kept.txt").string();
  std::ofstream(kept) << "keep me";
  fs::create_symlink(kept, dir / "out" / "ds_config.json");
  const std::string error = plan_error({"deepspeed", "train.py", "--deepspeed_config", user_config}, dir / "out");
  EXPECT_EQ(error.rfind("the config copy: ", 0), 0u) << error;
  EXPECT_NE(error.find((dir / "out" / "ds_config.json").string()), std::string::npos) << error;
  EXPECT_NE(error.find("choose another --out DIR"), std::string::npos) << error;
  EXPECT_EQ(testing::read_bytes(kept), "keep me");
  EXPECT_TRUE(fs::is_symlink(dir / "out" / "ds_config.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator{}), 1);
}

}  // namespace
}  // namespace shardscope::sessions
