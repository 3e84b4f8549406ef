// The Hugging Face Trainer's own records: its printed log dicts (a real transformers 5.24 +
// DeepSpeed 0.19.7 run's output, tests/sessions/data/hf_trainer_5.24_deepspeed_0.19.7_zero2_cpu.log,
// tqdm's "\r" redraws and all), trainer_state.json and its TensorBoard tags, each at its step.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "sessions/import/import_error.hpp"
#include "sessions/import/step_merger.hpp"
#include "sessions/import/trainer_log.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

namespace fs = std::filesystem;

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(SHARDSCOPE_TEST_DATA_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<TrainerLogRecord> read_output(const std::string& text) {
  TrainerOutputReader reader;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) reader.feed_line(line);
  reader.finish();
  return reader.take_records();
}

TEST(TrainerLog, PythonDictsQuotedBareAndNumpyValues) {
  const auto d = parse_python_dict_numbers("x {'loss': '2.31', \"grad_norm\": 1.5, 'lr': np.float64(5e-05), "
                                           "'name': 'abc', 'ids': [1, {'a': 2}], 'epoch': 0.25} y");
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->at("loss"), 2.31);
  EXPECT_DOUBLE_EQ(d->at("grad_norm"), 1.5);
  EXPECT_DOUBLE_EQ(d->at("lr"), 5e-05);
  EXPECT_DOUBLE_EQ(d->at("epoch"), 0.25);
  EXPECT_EQ(d->count("name"), 0u);
  EXPECT_EQ(d->count("ids"), 0u);
  EXPECT_FALSE(parse_python_dict_numbers("WORLD INFO DICT: {'localhost': [0]}"));
  EXPECT_FALSE(parse_python_dict_numbers("{'loss': '2.3'"));  // never closed
  EXPECT_FALSE(parse_python_dict_numbers("{loss: 2}"));       // not Python's repr
}

TEST(TrainerLog, RealTrainerOutputGivesEveryStepFromTheBarAfterIt) {
  const auto records = read_output(read_fixture("hf_trainer_5.24_deepspeed_0.19.7_zero2_cpu.log"));
  ASSERT_EQ(records.size(), 9u);  // 8 logging steps (logging_steps=1) and the train summary
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(records[i].step, i + 1);
    EXPECT_TRUE(records[i].values.count("loss")) << i;
  }
  EXPECT_DOUBLE_EQ(records[0].values.at("loss"), 5.391);
  EXPECT_DOUBLE_EQ(records[1].values.at("learning_rate"), 0.0004307);
  EXPECT_DOUBLE_EQ(records[7].values.at("grad_norm"), 1.511);
  EXPECT_EQ(records[8].step, 8);
  EXPECT_DOUBLE_EQ(records[8].values.at("train_loss"), 5.385);
}

TEST(TrainerLog, WithoutABarStepsFollowTheLoggingInterval) {
  // PrinterCallback (disable_tqdm): plain dicts, logging_steps=10, an eval at step 20.
  const auto records = read_output(
      "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n"  // unknown interval: step 1
      "{'loss': 2.4, 'learning_rate': 2e-05, 'epoch': 0.2}\n"
      "{'eval_loss': 2.45, 'eval_runtime': 1.5, 'epoch': 0.2}\n");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].step, 1);
  EXPECT_EQ(records[1].step, 2);
  EXPECT_EQ(records[2].step, 2);  // an eval belongs to the step just logged
  // With bars the interval is learnt, and a dict without a bar after it continues it.
  const auto barred = read_output(" 10%| 10/100 [00:01]\r{'loss': 2.5}\r 10%| 10/100 [00:01]\n"
                                  "{'loss': 2.4}\r 20%| 20/100 [00:02]\n{'loss': 2.3}\n");
  ASSERT_EQ(barred.size(), 3u);
  EXPECT_EQ(barred[0].step, 10);
  EXPECT_EQ(barred[1].step, 20);
  EXPECT_EQ(barred[2].step, 30);
}

TEST(TrainerLog, EventsPutTheLearningRateAtTheNextStepUnderDeepSpeed) {
  const std::vector<TrainerLogRecord> records = {
      {1, {{"loss", 5.0}, {"grad_norm", 1.5}, {"learning_rate", 0.1}, {"epoch", 0.01}}},
      {2, {{"eval_loss", 4.5}}}};
  const auto events = trainer_records_to_events(records);
  std::vector<StepMetrics> steps;
  std::vector<SeriesPoint> series;
  for (const auto& e : events) {
    if (const auto* m = std::get_if<StepMetrics>(&e)) steps.push_back(*m);
    if (const auto* p = std::get_if<SeriesPoint>(&e)) series.push_back(*p);
  }
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 1);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 5.0);
  EXPECT_DOUBLE_EQ(*steps[0].grad_norm, 1.5);
  EXPECT_FALSE(steps[0].lr);
  EXPECT_EQ(steps[1].step, 2);
  EXPECT_DOUBLE_EQ(*steps[1].lr, 0.1);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].name, "trainer/epoch");
  EXPECT_EQ(series[1].name, "eval/loss");
  EXPECT_EQ(series[1].step, 2);
  // Without DeepSpeed the Trainer reads the rate before its scheduler steps: the same step.
  const auto plain = trainer_records_to_events(records, {false});
  EXPECT_EQ(std::get<StepMetrics>(plain[2]).step, 1);
}

TEST(TrainerLog, MergerHoldsANextStepRateUntilTheStepRuns) {
  StepMerger merger;
  const auto events = trainer_records_to_events({{1, {{"loss", 5.0}, {"learning_rate", 0.1}}},
                                                 {2, {{"loss", 4.0}, {"learning_rate", 0.2}}}});
  for (const auto& e : events) merger.add(e, false);
  const auto rows = merger.all();
  ASSERT_EQ(rows.size(), 2u);  // step 3's rate alone is not a step that ran
  EXPECT_EQ(merger.size(), 2u);
  const auto& second = std::get<StepMetrics>(rows[1]);
  EXPECT_EQ(second.step, 2);
  EXPECT_DOUBLE_EQ(*second.loss, 4.0);
  EXPECT_DOUBLE_EQ(*second.lr, 0.1);
  // Live: the held row goes out once a later step arrives.
  StepMerger live;
  StepMetrics rate{};
  rate.step = 5;
  rate.lr = 0.3;
  live.add(rate, true);
  EXPECT_TRUE(live.take_changed().empty());
  StepMetrics later{};
  later.step = 6;
  later.lr = 0.4;
  live.add(later, true);
  const auto sent = live.take_changed();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(std::get<StepMetrics>(sent[0]).step, 5);
}

TEST(TrainerLog, TrainerStateGivesExactValuesWithSteps) {
  const auto records = parse_trainer_state(
      R"({"global_step": 3, "log_history": [{"loss": 5.390625, "grad_norm": 1.5712, "learning_rate": 0.0, "epoch": 0.001, "step": 1},
          {"eval_loss": 5.1, "step": 3}, {"note": "no step"}], "max_steps": 3})",
      "out/trainer_state.json");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].step, 1);
  EXPECT_DOUBLE_EQ(records[0].values.at("loss"), 5.390625);
  EXPECT_EQ(records[1].step, 3);
  EXPECT_THROW(parse_trainer_state("{\"global_step\": 3}", "x.json"), ImportError);
  EXPECT_THROW(parse_trainer_state("not json", "x.json"), ImportError);
}

TEST(TrainerLog, FindsTheNewestTrainerStateOfARun) {
  const fs::path dir = testing::temp_path("trainer_state");
  fs::create_directories(dir / "out" / "checkpoint-4");
  fs::create_directories(dir / "out" / "checkpoint-8");
  std::ofstream(dir / "out" / "checkpoint-4" / "trainer_state.json") << R"({"global_step": 4, "log_history": []})";
  std::ofstream(dir / "out" / "checkpoint-8" / "trainer_state.json") << R"({"global_step": 8, "log_history": []})";
  const auto found = find_trainer_state(dir.string());
  ASSERT_TRUE(found);
  EXPECT_EQ(fs::path(*found).parent_path().filename(), "checkpoint-8");
  EXPECT_FALSE(find_trainer_state(dir.string(), static_cast<double>(std::time(nullptr)) + 3600));
}

TEST(TrainerLog, TensorBoardTagsBecomeRecords) {
  const std::vector<MonitorSeries> series = {{"train/loss", {{1, 5.0, 0}, {2, 4.0, 0}}},
                                             {"eval/loss", {{2, 4.5, 0}}},
                                             {"Train/Samples/lr", {{8, 0.1, 0}}}};
  EXPECT_TRUE(is_trainer_tensorboard_series("train/loss"));
  EXPECT_FALSE(is_trainer_tensorboard_series("Train/Samples/lr"));
  const auto records = trainer_records_from_tensorboard(series);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].step, 2);
  EXPECT_DOUBLE_EQ(records[1].values.at("loss"), 4.0);
  EXPECT_DOUBLE_EQ(records[1].values.at("eval_loss"), 4.5);
}

TEST(TrainerLog, AccelerateTagsAndTheTrainerSummary) {
  // accelerator.log({"train_loss": ..., "lr": ...}, step=s) with the TensorBoard tracker.
  const auto records = trainer_records_from_tensorboard({{"train_loss", {{1, 3.0, 0}}}, {"lr", {{1, 0.01, 0}}}});
  ASSERT_EQ(records.size(), 1u);
  const auto events = trainer_records_to_events(records);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_DOUBLE_EQ(*std::get<StepMetrics>(events[0]).loss, 3.0);
  EXPECT_EQ(std::get<StepMetrics>(events[1]).step, 2);
  EXPECT_DOUBLE_EQ(*std::get<StepMetrics>(events[1]).lr, 0.01);
  // The Trainer's end-of-training dict: its train_loss is the run's average, not a step's loss.
  const auto summary = trainer_records_to_events({{8, {{"train_runtime", 0.585}, {"train_loss", 5.385}}}});
  ASSERT_EQ(summary.size(), 2u);
  for (const auto& e : summary) EXPECT_TRUE(std::holds_alternative<SeriesPoint>(e));
}

}  // namespace
}  // namespace shardscope::sessions
