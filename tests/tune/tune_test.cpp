// tune/ without trials: the space and its candidates, the autotuning block with DeepSpeed's words,
// the estimator's pruning against a budget, the tuners, early stopping and the tune tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <cmath>
#include <set>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "engine/memory_prediction.hpp"
#include "sessions/store.hpp"
#include "sessions/tune_records.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tune/autotuning_block.hpp"
#include "tune/candidate_config.hpp"
#include "tune/dominance.hpp"
#include "tune/memory_pruning.hpp"
#include "tune/search_space.hpp"
#include "tune/tune_error.hpp"
#include "tune/trial_runner.hpp"
#include "tune/tune_run.hpp"
#include "tune/tuners.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;

const json kUser = json::parse(R"({"train_batch_size": 16, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "zero_optimization": {"stage": 0}})");

engine::ModelSpec small_gpt2() {
  engine::ModelSpec spec = engine::default_model_spec(engine::ModelKind::kGpt2);
  spec.transformer.shape.layers = 2;
  spec.transformer.shape.hidden = 64;
  spec.transformer.shape.heads = 2;
  spec.transformer.shape.vocab = 256;
  spec.transformer.shape.seq_len = 64;
  return spec;
}

TEST(TuneSpace, SpaceFlagParsesJsonWordsAndDefault) {
  const Dimension d = parse_space_flag("zero_optimization.offload_optimizer.device=cpu, none,\"nvme\"");
  EXPECT_EQ(d.key, "zero_optimization.offload_optimizer.device");
  ASSERT_EQ(d.values.size(), 3u);
  EXPECT_EQ(d.values[0], "cpu");
  EXPECT_TRUE(d.values[1].is_null());
  EXPECT_EQ(d.values[2], "nvme");
  EXPECT_EQ(parse_space_flag("zero_optimization.reduce_bucket_size=5e8").values[0], 5e8);
  EXPECT_THROW(parse_space_flag("zero_optimization.stage"), TuneError);
  EXPECT_THROW(parse_space_flag("=1,2"), TuneError);
  EXPECT_THROW(parse_space_flag("zero_optimization.stage=,"), TuneError);
}

TEST(TuneSpace, MicroBatchFixesAccumulationForTheGlobalBatch) {
  DefaultSpaceOptions o;
  const auto space = default_search_space(kUser, 2, o, {parse_space_flag("zero_optimization.stage=1"),
                                                        parse_space_flag("activation_checkpointing=false"),
                                                        parse_space_flag("zero_optimization.offload_optimizer.device=none"),
                                                        parse_space_flag("zero_optimization.offload_param.device=none"),
                                                        parse_space_flag("train_micro_batch_size_per_gpu=1,2,3,8,16")});
  const auto all = enumerate_assignments(space);
  // 16 / (mb x 2 ranks): 3 does not divide, 16 x 2 exceeds the batch.
  std::vector<std::pair<long long, long long>> seen;
  for (const auto& a : all) {
    long long mb = 0, gas = 0;
    for (const auto& [k, v] : a) {
      if (k == kMicroBatchKey) mb = v.get<long long>();
      if (k == kAccumulationKey) gas = v.get<long long>();
    }
    seen.push_back({mb, gas});
  }
  EXPECT_EQ(seen, (std::vector<std::pair<long long, long long>>{{1, 8}, {2, 4}, {8, 1}}));
  EXPECT_THROW(default_search_space(kUser, 2, o, {parse_space_flag("gradient_accumulation_steps=1,2")}), TuneError);
}

TEST(TuneSpace, DefaultSpaceHasTheIssuesDimensionsAndNvmeOnlyWhereConfigured) {
  DefaultSpaceOptions o;
  auto keys = [](const SearchSpace& s) {
    std::set<std::string> k;
    for (const auto& d : s.dimensions) k.insert(d.key);
    return k;
  };
  const auto fast = default_search_space(kUser, 1, o, {});
  EXPECT_EQ(keys(fast), (std::set<std::string>{"zero_optimization.stage", kMicroBatchKey, kCheckpointingKey,
                                               "zero_optimization.offload_optimizer.device",
                                               "zero_optimization.offload_param.device"}));
  for (const auto& d : fast.dimensions)
    if (d.key.find("offload") != std::string::npos) EXPECT_EQ(d.values.size(), 2u) << d.key;
  o.fast = false;
  json nvme = kUser;
  nvme["zero_optimization"]["offload_param"] = {{"nvme_path", "/local_nvme"}};
  const auto slow = default_search_space(nvme, 1, o, {});
  EXPECT_TRUE(keys(slow).count("zero_optimization.reduce_bucket_size"));
  EXPECT_TRUE(keys(slow).count("zero_optimization.stage3_prefetch_bucket_size"));
  for (const auto& d : slow.dimensions) {
    if (d.key == "zero_optimization.offload_param.device") EXPECT_EQ(d.values.back(), "nvme");
    if (d.key == "zero_optimization.offload_optimizer.device") EXPECT_EQ(d.values.size(), 2u);
  }
}

TEST(TuneCandidate, OnlyTheTunedKeysDiffer) {
  const Assignment a = {{"zero_optimization.stage", 3}, {kMicroBatchKey, 2}, {kCheckpointingKey, true},
                        {"zero_optimization.offload_optimizer.device", "cpu"}, {"zero_optimization.offload_param.device", nullptr}};
  const json c = candidate_config(kUser, a);
  json expected = kUser;
  expected["zero_optimization"]["stage"] = 3;
  expected["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  expected["train_micro_batch_size_per_gpu"] = 2;
  expected["activation_checkpointing"] = {{"partition_activations", false}};
  EXPECT_EQ(c, expected);
  EXPECT_EQ(assignment_name(a), "z3 mb2 ckpt opt=cpu");
  // null removes a key the user wrote, and the object it leaves empty.
  json user = kUser;
  user["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  const json removed = candidate_config(user, {{"zero_optimization.offload_param.device", nullptr}});
  EXPECT_FALSE(removed["zero_optimization"].contains("offload_param"));
}

TEST(TuneCandidate, ValidatorRefusesWhatDeepSpeedWouldNotRun) {
  const json stage0_offload = candidate_config(kUser, {{"zero_optimization.offload_optimizer.device", "cpu"}});
  EXPECT_NE(check_candidate(stage0_offload, 1).refusal, "");
  const json bad_batch = candidate_config(kUser, {{kMicroBatchKey, 3}, {kAccumulationKey, 1}});
  EXPECT_NE(check_candidate(bad_batch, 2).refusal, "") << "16 != 3 x 1 x 2 is DeepSpeed's batch assertion";
  const json stage2_param = candidate_config(kUser, {{"zero_optimization.stage", 2}, {"zero_optimization.offload_param.device", "cpu"}});
  EXPECT_TRUE(check_candidate(stage2_param, 1).duplicate);
  const auto fine = check_candidate(candidate_config(kUser, {{"zero_optimization.stage", 3}}), 2);
  EXPECT_EQ(fine.refusal, "");
  ASSERT_TRUE(fine.config);
  EXPECT_EQ(fine.config->zero.stage, 3);
}

TEST(TuneAutotuning, ReadsDeepSpeedKeysWithItsDefaultsAndWords) {
  const auto defaults = read_autotuning_block(json::object(), "ds.json");
  EXPECT_FALSE(defaults.present);
  EXPECT_EQ(defaults.tuner_type, "gridsearch");
  EXPECT_EQ(defaults.tuner_early_stopping, 5);
  EXPECT_EQ(defaults.tuner_num_trials, 50);
  EXPECT_EQ(defaults.start_profile_step, 3);
  EXPECT_EQ(defaults.end_profile_step, 5);
  EXPECT_EQ(defaults.num_tuning_micro_batch_sizes, 3);
  EXPECT_EQ(defaults.max_train_micro_batch_size_per_gpu, 1024);
  const auto b = read_autotuning_block(json::parse(R"({"autotuning": {"enabled": true, "tuner_type": "model_based",
      "tuner_early_stopping": 2, "metric": "latency", "arg_mappings": {"train_micro_batch_size_per_gpu": "--mbs"},
      "model_info": {"num_params": 100}, "bogus": 1}})"), "ds.json");
  EXPECT_EQ(b.tuner_type, "model_based");
  EXPECT_EQ(b.tuner_early_stopping, 2);
  EXPECT_EQ(metric_for_autotuning(b.metric), "step_time");
  EXPECT_EQ(b.arg_mappings.at("train_micro_batch_size_per_gpu"), "--mbs");
  EXPECT_GE(b.notes.size(), 3u);  // bogus, model_info, enabled
  auto message = [](const char* text) {
    try {
      read_autotuning_block(json::parse(text), "ds.json");
    } catch (const TuneError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(R"({"autotuning": {"results_dir": ""}})").find("results_dir cannot be empty"), std::string::npos);
  EXPECT_NE(message(R"({"autotuning": {"exps_dir": ""}})").find("exps_dir cannot be empty"), std::string::npos);
  EXPECT_NE(message(R"({"autotuning": {"tuner_type": "bayes"}})").find("ds.json: autotuning.tuner_type"), std::string::npos);
  EXPECT_NE(message(R"({"autotuning": {"mp_size": 2}})").find("mp_size"), std::string::npos);
  EXPECT_NE(message(R"({"autotuning": {"start_profile_step": 5, "end_profile_step": 5}})").find("end_profile_step"),
            std::string::npos);
}

TEST(TunePruning, PrunesExactlyWhatTheEstimatorPutsOverTheBudget) {
  TuneRequest r;
  r.user_config = kUser;
  r.model = small_gpt2();
  r.world_size = 2;
  r.space_flags = {parse_space_flag("zero_optimization.stage=0,3"), parse_space_flag("train_micro_batch_size_per_gpu=1,8"),
                   parse_space_flag("activation_checkpointing=false"),
                   parse_space_flag("zero_optimization.offload_optimizer.device=none"),
                   parse_space_flag("zero_optimization.offload_param.device=none")};
  r.micro_batch_from_default = false;
  r.memory.device_level = false;
  r.memory.margin = 0.10;
  // A budget between the smallest and largest predictions: some candidates must go, not all.
  std::vector<std::string> left_out;
  std::size_t grid = 0;
  r.memory.bytes = 1e15;
  const auto all = plan_candidates(r, left_out, grid);
  ASSERT_EQ(all.size(), 4u);
  std::vector<double> predicted;
  for (const auto& c : all) predicted.push_back(c.predicted_bytes);
  std::sort(predicted.begin(), predicted.end());
  ASSERT_LT(predicted.front(), predicted.back());
  r.memory.bytes = (predicted.front() + predicted.back()) / 2 / (1 - r.memory.margin);
  const auto judged = plan_candidates(r, left_out, grid);
  int pruned = 0;
  for (const auto& c : judged) {
    // The very prediction `shardscope train` logs for this config.
    const auto check = check_candidate(c.config, 2);
    ASSERT_TRUE(check.config);
    const auto m = engine::predict_memory(*check.config, r.model, 2, false);
    EXPECT_DOUBLE_EQ(c.predicted_bytes, m.total_bytes);
    EXPECT_EQ(c.prune_reason.empty(), m.total_bytes <= r.memory.usable_bytes()) << c.prune_reason;
    if (!c.prune_reason.empty()) {
      ++pruned;
      EXPECT_NE(c.prune_reason.find("usable"), std::string::npos) << c.prune_reason;
    }
  }
  EXPECT_GT(pruned, 0);
  EXPECT_LT(pruned, 4);
}

TEST(TuneTrialLog, TheLaunchersVerdictIsWhyATrialFailed) {
  // A failed trial's message is the launcher's verdict, not the closing summary's error count row
  // nor a warning text that happens to say "error".
  test::TempDir dir;
  std::ofstream(dir.file("trial.log")) << "[rank 1] warning: error_tolerance is unset\n"
                                          "shardscope launch: rank 1 exited with code 1 (the first rank to fail); the "
                                          "launcher stopped rank(s) 0. Exit code 1.\n"
                                          "  log warnings / errors        1 / 6\n";
  TrialProcessResult r;
  scan_trial_log(dir.file("trial.log"), r);
  EXPECT_NE(r.last_error.find("(the first rank to fail)"), std::string::npos) << r.last_error;
  EXPECT_FALSE(r.out_of_memory);
  std::ofstream(dir.file("oom.log")) << "[rank 0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
                                        "  log warnings / errors        0 / 3\n";
  TrialProcessResult oom;
  scan_trial_log(dir.file("oom.log"), oom);
  EXPECT_TRUE(oom.out_of_memory);
  EXPECT_NE(oom.last_error.find("CUDA out of memory"), std::string::npos) << oom.last_error;
}

TEST(TuneTuners, GridIsInOrderRandomIsASeededPermutation) {
  std::vector<Assignment> c;
  for (int mb = 1; mb <= 8; ++mb) c.push_back({{kMicroBatchKey, mb}});
  std::vector<bool> tried(c.size(), false);
  auto grid = make_tuner(TunerType::kGridSearch, c, 1);
  EXPECT_EQ(grid->next({}, tried), 0u);
  tried[0] = true;
  EXPECT_EQ(grid->next({}, tried), 1u);
  auto order = [&](std::uint64_t seed) {
    auto t = make_tuner(TunerType::kRandom, c, seed);
    std::vector<bool> done(c.size(), false);
    std::vector<std::size_t> picks;
    while (const auto p = t->next({}, done)) picks.push_back(*p), done[*p] = true;
    return picks;
  };
  const auto a = order(7), b = order(7), other = order(8);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), c.size());
  EXPECT_EQ(std::set<std::size_t>(a.begin(), a.end()).size(), c.size());
  EXPECT_NE(a, other);
}

TEST(TuneTuners, RidgeRecoversALinearFunction) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (double u = 0; u < 5; ++u)
    for (double v = 0; v < 2; ++v) x.push_back({1, u, v}), y.push_back(3 + 2 * u - 4 * v);
  const auto w = fit_ridge(x, y, 1e-9);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NEAR(w[0], 3, 1e-6);
  EXPECT_NEAR(w[1], 2, 1e-6);
  EXPECT_NEAR(w[2], -4, 1e-6);
}

TEST(TuneTuners, ModelBasedGoesWhereTheSurrogatePointsAfterItsRandomStart) {
  std::vector<Assignment> c;
  for (int mb : {1, 2, 4, 8, 16, 32, 64, 128}) c.push_back({{kMicroBatchKey, mb}});
  const auto features = assignment_features(c);
  // Throughput rising with log2(1 + mb): the best untried candidate is the largest micro-batch.
  int went_largest = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto t = make_tuner(TunerType::kModelBased, c, seed);
    std::vector<bool> tried(c.size(), false);
    std::vector<Observation> seen;
    for (int i = 0; i < 2; ++i) {
      const auto p = t->next(seen, tried);
      ASSERT_TRUE(p);
      tried[*p] = true;
      seen.push_back({*p, 10 * features[*p][1]});
    }
    if (tried.back()) continue;  // the random start already took it
    if (t->next(seen, tried) == c.size() - 1) ++went_largest;
  }
  // Exploration (20%) picks at random; the rest follow the surrogate.
  EXPECT_GE(went_largest, 10);
}

TEST(TuneDominance, CheckpointingAndOffloadAreDominatedBySiblingsWithThemOff) {
  const char* opt = "zero_optimization.offload_optimizer.device";
  std::vector<Assignment> c;
  for (int mb : {2, 4})
    for (bool ckpt : {false, true})
      for (const json& device : {json(nullptr), json("cpu"), json("nvme")})
        c.push_back({{"zero_optimization.stage", 2}, {kMicroBatchKey, mb}, {kCheckpointingKey, ckpt}, {opt, device}});
  auto index = [&](int mb, bool ckpt, const json& device) {
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i][1].second == mb && c[i][2].second == ckpt && c[i][3].second == device) return i;
    ADD_FAILURE() << "no candidate";
    return c.size();
  };
  const auto siblings = dominating_siblings(c);
  ASSERT_EQ(siblings.size(), c.size());
  // Nothing is faster than the plain config; another micro-batch is never a sibling.
  EXPECT_TRUE(siblings[index(2, false, nullptr)].empty());
  EXPECT_TRUE(siblings[index(4, false, nullptr)].empty());
  EXPECT_EQ(siblings[index(4, true, nullptr)], std::vector<std::size_t>{index(4, false, nullptr)});
  EXPECT_EQ(siblings[index(2, false, "cpu")], std::vector<std::size_t>{index(2, false, nullptr)});
  EXPECT_EQ(siblings[index(2, false, "nvme")],
            (std::vector<std::size_t>{index(2, false, "cpu"), index(2, false, nullptr)}));
  EXPECT_EQ(siblings[index(2, true, "cpu")].size(), 2u);  // checkpointing off, or offload off
  EXPECT_EQ(relaxed_feature(c[index(4, true, nullptr)], c[index(4, false, nullptr)]), "activation checkpointing");
  EXPECT_EQ(relaxed_feature(c[index(2, false, "nvme")], c[index(2, false, "cpu")]), "optimizer offload to nvme");
  EXPECT_EQ(relaxed_feature(c[index(2, true, "cpu")], c[index(4, true, "cpu")]), "");
  // A sibling that went out of memory no longer blocks: the slower config is worth a trial again.
  std::vector<bool> failed(c.size(), false);
  const auto& nvme = siblings[index(2, false, "nvme")];
  EXPECT_EQ(blocking_sibling(nvme, failed), index(2, false, "cpu"));
  failed[index(2, false, "cpu")] = true;
  EXPECT_EQ(blocking_sibling(nvme, failed), index(2, false, nullptr));
  failed[index(2, false, nullptr)] = true;
  EXPECT_FALSE(blocking_sibling(nvme, failed));
}

TEST(TuneTuners, EarlyStoppingCountsTrialsAfterTheBest) {
  EXPECT_FALSE(should_stop_early(3, std::nullopt, 2));
  EXPECT_FALSE(should_stop_early(2, 0, 2));  // one trial after the best
  EXPECT_TRUE(should_stop_early(3, 0, 2));   // two after it
  EXPECT_FALSE(should_stop_early(3, 1, 2));
  EXPECT_FALSE(should_stop_early(100, 0, 0));
}

TEST(TuneRecords, RunsAndTrialsRoundTripAndReplace) {
  test::TempDir dir;
  auto store = sessions::Store::open_or_create(dir.file("t.db"));
  sessions::insert_tune_run(store, {"run1", 10.0, "fp", "{}", "running", std::nullopt});
  EXPECT_THROW(sessions::insert_tune_run(store, {"run1", 11.0, "fp", "{}", "running", std::nullopt}), std::exception);
  sessions::TuneTrialRecord t;
  t.run_uid = "run1";
  t.candidate_key = "{\"a\":1}";
  t.trial = 1;
  t.name = "z1";
  t.params_json = "{\"a\":1}";
  t.status = "running";
  sessions::put_tune_trial(store, t);
  t.status = "ok";
  t.metric_value = 12.5;
  t.measured_peak_bytes = 1024;
  t.session_uid = "abc";
  sessions::put_tune_trial(store, t);
  const auto rows = sessions::load_tune_trials(store, "run1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, "ok");
  EXPECT_TRUE(rows[0].finished());
  EXPECT_EQ(rows[0].metric_value, 12.5);
  EXPECT_EQ(rows[0].measured_peak_bytes, 1024);
  EXPECT_EQ(rows[0].session_uid, "abc");
  sessions::finish_tune_run(store, "run1", "completed", 20.0);
  EXPECT_EQ(sessions::load_tune_runs(store).at(0).status, "completed");
}

}  // namespace
}  // namespace shardscope::tune
