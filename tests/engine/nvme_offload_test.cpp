// ZeRO-Infinity on the CPU (Gloo ranks as threads): NVMe offload of the optimizer, of the
// parameters and of both, on 1 and 2 ranks, trains to the losses of the same run with CPU offload
// (relative difference under 1e-6 in fp32: the same CPU kernels step the same numbers, read back
// from files; ctest runs MKL on one thread, whose threaded sgemm is not reproducible run to run);
// so do pipelined swapping and a partial ratio. The swap files exist in DeepSpeed's
// folders while the engine lives and are gone after; a checkpoint holds the whole optimizer state
// and resumes on CPU offload and on no offload; bad paths, failed reads and too few buffers are
// named with the file, the rank and the cause.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "aio/backend_probe.hpp"
#include "aio/io_error.hpp"
#include "aio/swap_folder.hpp"
#include "checkpoints/deepspeed_checkpoint.hpp"
#include "engine/engine.hpp"
#include "tests/engine/engine_test_support.hpp"
#include "tests/engine/rank_threads.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::engine {
namespace {

using testing::fixed_batch;
using testing::resolved_config;
using testing::run_ranks;

constexpr int kGlobalBatch = 8;

// Big enough that a block's chunk is above DeepSpeed's 1 MiB swap threshold on 2 ranks (~0.8M
// parameters per block), small enough for seconds of CPU time; the embeddings stay below it.
std::shared_ptr<TrainableModel> swap_sized_model() {
  torch::manual_seed(11);
  ModelSpec spec = default_model_spec(ModelKind::kGpt2);
  auto& s = spec.transformer.shape;
  s.layers = 2;
  s.hidden = 256;
  s.heads = 4;
  s.vocab = 256;
  s.seq_len = 16;
  s.max_positions = 16;
  return build_model(spec);
}

// Stage 3, fp32, AdamW with clipping; `offload` is the offload blocks, `extra` more zero keys.
std::string config(int micro_batch, const std::string& offload, const std::string& extra = "") {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro_batch) +
         R"(, "gradient_accumulation_steps": 1,
             "optimizer": {"type": "AdamW", "params": {"lr": 0.003, "weight_decay": 0.01}},
             "gradient_clipping": 0.5,
             "zero_optimization": {"stage": 3, "sub_group_size": 400000, "stage3_param_persistence_threshold": 0)" +
         (offload.empty() ? "" : ", " + offload) + extra + "}}";
}

std::string optimizer_block(const std::string& device, const std::string& path, const std::string& more = "") {
  if (device == "none") return "";
  return R"("offload_optimizer": {"device": ")" + device + "\"" +
         (device == "nvme" ? R"(, "nvme_path": ")" + path + "\"" : "") + more + "}";
}

std::string param_block(const std::string& device, const std::string& path) {
  if (device == "none") return "";
  return R"("offload_param": {"device": ")" + device + "\"" +
         (device == "nvme" ? R"(, "nvme_path": ")" + path + R"(", "max_in_cpu": 0, "buffer_size": 1000000)" : "") + "}";
}

std::string joined(const std::string& a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + ", " + b; }

int files_in(const std::string& folder) {
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// One CPU rank that logs nothing.
EngineOptions quiet_cpu() {
  EngineOptions options;
  options.log = [](const std::string&) {};
  return options;
}

// Trains `steps` steps from global batch `first`; this rank takes its slice. Per-step mean loss.
std::vector<double> train(Engine& engine, int first, int steps) {
  std::vector<double> losses;
  const int world = engine.world_size(), rank = engine.rank();
  const auto mb = engine.train_micro_batch_size_per_gpu();
  for (int s = first; s < first + steps; ++s) {
    const Batch global = fixed_batch(ModelKind::kGpt2, s % 4, mb * world);
    auto loss = engine.forward({global.inputs.narrow(0, rank * mb, mb), global.targets.narrow(0, rank * mb, mb)});
    double mean = loss.item<double>();
    engine.backward(loss);
    engine.step();
    if (auto* comm = engine.communicator()) mean = comm->all_reduce_scalar(mean, ReduceOp::kSum) / world;
    losses.push_back(mean);
  }
  return losses;
}

struct RunCheck {
  std::function<void(Engine&)> during;  ///< called on rank 0 after the first step
};

std::vector<double> run(int world, const std::string& json, int steps, const RunCheck& check = {}) {
  std::vector<std::shared_ptr<TrainableModel>> models;
  for (int r = 0; r < world; ++r) models.push_back(swap_sized_model());
  std::vector<double> losses;
  const auto body = [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    options.log = [](const std::string&) {};
    Engine engine(models[static_cast<std::size_t>(rank)], resolved_config(json), options);
    auto first = train(engine, 0, 1);
    if (rank == 0 && check.during) check.during(engine);
    auto rest = train(engine, 1, steps - 1);
    first.insert(first.end(), rest.begin(), rest.end());
    if (rank == 0) losses = first;
  };
  if (world == 1) {
    body(0, nullptr);
  } else {
    run_ranks(world, body);
  }
  return losses;
}

void expect_same_losses(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LT(std::abs(got[i] - want[i]) / std::abs(want[i]), 1e-6)
        << what << " step " << i << ": " << got[i] << " vs CPU offload's " << want[i];
}

bool nvme_possible() {
  for (auto b : aio::all_io_backends())
    if (aio::probe_io_backend(b, "/tmp").works) return true;
  return false;
}

#define SKIP_WITHOUT_AIO() \
  if (!nvme_possible()) GTEST_SKIP() << "no asynchronous I/O backend works here (see `shardscope report`)"

struct NvmeCase {
  const char* name;
  const char* optimizer;  ///< offload_optimizer device of the NVMe run
  const char* params;     ///< offload_param device of the NVMe run
  int world;
};

void PrintTo(const NvmeCase& c, std::ostream* os) { *os << c.name << " on " << c.world << " rank(s)"; }

class NvmeMatchesCpuOffload : public ::testing::TestWithParam<NvmeCase> {};

TEST_P(NvmeMatchesCpuOffload, SameLossesAndNoSwapFileLeft) {
  SKIP_WITHOUT_AIO();
  const NvmeCase c = GetParam();
  test::TempDir nvme;
  const std::string what = std::string(c.name) + " on " + std::to_string(c.world) + " rank(s)";
  const auto cpu = [](const char* d) { return std::string(d) == "nvme" ? std::string("cpu") : std::string(d); };
  const auto reference = run(c.world, config(kGlobalBatch / c.world, joined(optimizer_block(cpu(c.optimizer), ""),
                                                                              param_block(cpu(c.params), ""))), 4);
  RunCheck check;
  int optimizer_files = -1, param_files = -1;
  check.during = [&](Engine&) {
    optimizer_files = files_in(aio::optimizer_swap_folder(nvme.file(""), 0));
    param_files = files_in(aio::param_swap_folder(nvme.file(""), "float32", 0));
  };
  const auto losses = run(c.world, config(kGlobalBatch / c.world, joined(optimizer_block(c.optimizer, nvme.file("")),
                                                                           param_block(c.params, nvme.file("")))),
                          4, check);
  expect_same_losses(losses, reference, what);
  EXPECT_LT(losses.back(), losses.front()) << what << ": it does not learn";
  // Swapped while the engine lives: each block's fp32 master and two AdamW states (3 files per
  // sub-group); each block's 16-bit chunk. The embeddings are below 1 MiB a rank on 2 ranks and
  // stay in memory.
  if (std::string(c.optimizer) == "nvme")
    EXPECT_GE(optimizer_files, 6) << what;
  else
    EXPECT_EQ(optimizer_files, -1) << what;
  if (std::string(c.params) == "nvme")
    EXPECT_GE(param_files, 2) << what;
  else
    EXPECT_EQ(param_files, -1) << what;
  EXPECT_FALSE(exists(nvme.file("zero_stage_3"))) << what << ": swap files outlived the engine";
}

INSTANTIATE_TEST_SUITE_P(NvmeOffload, NvmeMatchesCpuOffload,
                         ::testing::Values(NvmeCase{"optimizer", "nvme", "none", 1}, NvmeCase{"optimizer", "nvme", "none", 2},
                                           NvmeCase{"parameters", "none", "nvme", 1}, NvmeCase{"parameters", "none", "nvme", 2},
                                           NvmeCase{"both", "nvme", "nvme", 1}, NvmeCase{"both", "nvme", "nvme", 2}),
                         [](const auto& info) {
                           return std::string(info.param.name) + "_ranks" + std::to_string(info.param.world);
                         });

TEST(NvmeOffload, PipelinedSwappingMatchesCpuOffload) {
  SKIP_WITHOUT_AIO();
  const auto reference = run(1, config(kGlobalBatch, optimizer_block("cpu", "")), 4);
  for (const char* pipe : {R"(, "pipeline_read": true, "buffer_count": 6)", R"(, "pipeline_write": true, "buffer_count": 6)",
                           R"(, "pipeline_read": true, "pipeline_write": true, "buffer_count": 9)"}) {
    test::TempDir nvme;
    expect_same_losses(run(1, config(kGlobalBatch, optimizer_block("nvme", nvme.file(""), pipe)), 4), reference, pipe);
  }
}

class PartialRatio : public ::testing::TestWithParam<int> {};

// ratio 0.5: the first half of the groups keep their state on the device (here the CPU, with the
// same kernels), the rest on NVMe or in host memory: the losses do not change.
TEST_P(PartialRatio, MatchesFullOffload) {
  SKIP_WITHOUT_AIO();
  const int world = GetParam();
  test::TempDir nvme;
  const auto full = run(world, config(kGlobalBatch / world, optimizer_block("cpu", "")), 4);
  const auto cpu_half = run(world, config(kGlobalBatch / world, optimizer_block("cpu", "", R"(, "ratio": 0.5)")), 4);
  const auto nvme_half =
      run(world, config(kGlobalBatch / world, optimizer_block("nvme", nvme.file(""), R"(, "ratio": 0.5)")), 4);
  expect_same_losses(cpu_half, full, "ratio 0.5 on the CPU, " + std::to_string(world) + " rank(s)");
  expect_same_losses(nvme_half, full, "ratio 0.5 on NVMe, " + std::to_string(world) + " rank(s)");
}

INSTANTIATE_TEST_SUITE_P(NvmeOffload, PartialRatio, ::testing::Values(1, 2),
                         [](const auto& info) { return "ranks" + std::to_string(info.param); });

TEST(NvmeOffload, CheckpointHoldsTheWholeStateAndResumesOnCpuOffloadOrNone) {
  SKIP_WITHOUT_AIO();
  test::TempDir nvme, ckpt;
  const std::string nvme_json = config(kGlobalBatch, joined(optimizer_block("nvme", nvme.file("")), param_block("nvme", nvme.file(""))));
  std::vector<double> continued;
  {
    Engine engine(swap_sized_model(), resolved_config(nvme_json), quiet_cpu());
    train(engine, 0, 2);
    engine.save_checkpoint(ckpt.file(""), "two");
    continued = train(engine, 2, 2);
  }
  // The saved state is the whole optimizer state, not what happened to be in memory.
  const checkpoints::DeepSpeedCheckpoint saved(ckpt.file("") + "/two");
  std::int64_t numel = 0;
  for (const auto& p : saved.summary().parameters) numel += p.numel;
  for (const char* name : {"fp32", "exp_avg", "exp_avg_sq"}) {
    const auto values = saved.canonical(name);
    ASSERT_EQ(static_cast<std::int64_t>(values.size()), numel) << name;
    const auto nonzero = std::count_if(values.begin(), values.end(), [](float v) { return v != 0.0f; });
    EXPECT_GT(nonzero, numel * 9 / 10) << name << " is mostly zeros";
  }
  for (const std::string& offload : {optimizer_block("cpu", ""), std::string()}) {
    Engine resumed(swap_sized_model(), resolved_config(config(kGlobalBatch, offload)),
                   quiet_cpu());
    resumed.load_checkpoint(ckpt.file(""), "two");
    expect_same_losses(train(resumed, 2, 2), continued, offload.empty() ? "resumed without offload" : "resumed on CPU offload");
  }
  // And back onto NVMe from a CPU-offload checkpoint.
  {
    Engine resumed(swap_sized_model(), resolved_config(nvme_json), quiet_cpu());
    resumed.load_checkpoint(ckpt.file(""), "two");
    expect_same_losses(train(resumed, 2, 2), continued, "resumed on NVMe");
  }
}

TEST(NvmeOffload, AFailedReadNamesTheFileTheRankAndTheCause) {
  SKIP_WITHOUT_AIO();
  test::TempDir nvme;
  Engine engine(swap_sized_model(), resolved_config(config(kGlobalBatch, optimizer_block("nvme", nvme.file("")))),
                quiet_cpu());
  train(engine, 0, 1);
  // Another process truncates a swap file under the run.
  const std::string folder = aio::optimizer_swap_folder(nvme.file(""), 0);
  std::string victim;
  DIR* dir = ::opendir(folder.c_str());
  ASSERT_NE(dir, nullptr);
  while (const dirent* e = ::readdir(dir))
    if (std::string(e->d_name).rfind("exp_avg_sq-", 0) == 0) victim = folder + "/" + e->d_name;
  ::closedir(dir);
  ASSERT_FALSE(victim.empty());
  ASSERT_EQ(::truncate(victim.c_str(), 0), 0);
  try {
    train(engine, 1, 1);
    FAIL() << "a step read a truncated swap file without error";
  } catch (const aio::IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0: cannot read '" + victim + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("unexpected end of file"), std::string::npos) << what;
  }
}

TEST(NvmeOffload, UnusablePathsAndTooFewBuffersAreNamed) {
  SKIP_WITHOUT_AIO();
  test::TempDir dir;
  std::ofstream(dir.file("a_file")) << "x";
  const auto refusal = [](const std::string& json) -> std::string {
    try {
      Engine engine(swap_sized_model(), resolved_config(json), quiet_cpu());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  const std::string below_file = dir.file("a_file") + "/nvme";
  const std::string path_error = refusal(config(kGlobalBatch, optimizer_block("nvme", below_file)));
  EXPECT_NE(path_error.find("rank 0: cannot create swap folder '" + aio::optimizer_swap_folder(below_file, 0) + "'"),
            std::string::npos)
      << path_error;
  EXPECT_NE(path_error.find("Not a directory (ENOTDIR)"), std::string::npos) << path_error;
  const std::string buffers = refusal(config(kGlobalBatch, optimizer_block("nvme", dir.file(""), R"(, "pipeline_read": true)")));
  EXPECT_NE(buffers.find("zero_optimization.offload_optimizer.buffer_count is 4"), std::string::npos) << buffers;
  EXPECT_NE(buffers.find("set buffer_count to 6"), std::string::npos) << buffers;
  const std::string param_buffer = refusal(config(
      kGlobalBatch, R"("offload_param": {"device": "nvme", "nvme_path": ")" + dir.file("") +
                        R"(", "max_in_cpu": 0, "buffer_size": 300000})"));
  EXPECT_NE(param_buffer.find("zero_optimization.offload_param.buffer_size is 300000 elements"), std::string::npos)
      << param_buffer;
  EXPECT_FALSE(exists(dir.file("zero_stage_3"))) << "a refused start left swap folders behind";
}

}  // namespace
}  // namespace shardscope::engine
