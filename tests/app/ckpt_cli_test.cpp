// `shardscope ckpt info` and `ckpt consolidate` on real checkpoints: a tiny GPT-2 trained 3 steps
// by `shardscope launch` with 2 CPU ranks at ZeRO stage 3 and at stage 1, and by one rank at
// stage 0 with the same global batch. The consolidated weights are checked against the stage-1
// model-states file's own full weights (written by rank 0 from the all-gathered parameters, not
// from the shards), across stages, and against the single-rank run.
#include <gtest/gtest.h>

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoints/torch_file.hpp"
#include "engine/models/safetensors_file.hpp"
#include "estimator/safetensors_header.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::testing {
namespace {

using test::free_port;

using Json = nlohmann::json;
using Weights = std::map<std::string, torch::Tensor>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : -1;
}

std::set<std::string> files_in(const std::string& folder) {
  std::set<std::string> names;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

Weights as_map(const engine::NamedTensors& tensors) { return Weights(tensors.begin(), tensors.end()); }

// The full weights rank 0 wrote into mp_rank_00_model_states.pt (stages 0-2), read by the
// checkpoint library; a tied alias (a second tensor on the same storage) is left out.
Weights module_weights(const std::string& tag_folder) {
  const checkpoints::TorchFile file(tag_folder + "/mp_rank_00_model_states.pt");
  std::set<std::uint32_t> storages;
  Weights out;
  for (const auto& [key, value] : file.root()["module"].entries()) {
    if (!storages.insert(value.as_tensor().storage).second) continue;
    const auto values = file.read_float32(value.as_tensor());
    out[key.as_string()] = torch::tensor(values).reshape(value.as_tensor().shape);
  }
  return out;
}

double max_difference(const Weights& a, const Weights& b) {
  double worst = 0;
  for (const auto& [name, t] : a) worst = std::max(worst, (t.to(torch::kDouble) - b.at(name).to(torch::kDouble)).abs().max().item<double>());
  return worst;
}

std::set<std::string> names_of(const Weights& w) {
  std::set<std::string> names;
  for (const auto& [name, t] : w) names.insert(name);
  return names;
}

// Three checkpoints, each trained on first use and kept for the suite (ctest runs each test in
// its own process, so a test trains only the ones it reads).
class CkptCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { temp_ = std::make_unique<test::TempDir>(); }
  static void TearDownTestSuite() { temp_.reset(); }

  // A tiny GPT-2, 3 steps, global batch 4: 2 ranks x 2 samples, or 1 rank x 2 samples x 2 micro-steps.
  static void train(int stage, int ranks, const std::string& name) {
    const std::string config = temp_->file(name + ".json");
    std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": )"
                          << (ranks == 2 ? 1 : 2) << R"(, "gradient_clipping": 1.0,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "zero_optimization": {"stage": )" << stage << "}}";
    std::vector<std::string> args{"--config", config, "--model", "gpt2", "--layers", "2", "--hidden", "32",
                                  "--heads", "2", "--vocab", "64", "--seq-len", "16", "--steps", "3",
                                  "--save", temp_->file(name)};
    if (ranks == 1) {
      args.insert(args.begin(), "train");
      args.insert(args.end(), {"--device", "cpu"});
    } else {
      args.insert(args.begin(), {"launch", "--num_procs", "2", "--master_port", std::to_string(free_port()), "--"});
    }
    const auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  // The checkpoint folder "zero3" (2 ranks, stage 3), "zero1" (2 ranks, stage 1) or "single".
  static std::string dir(const std::string& name) {
    if (!temp_->exists(name)) {
      if (name == "zero3") train(3, 2, name);
      if (name == "zero1") train(1, 2, name);
      if (name == "single") train(0, 1, name);
    }
    return temp_->file(name);
  }
  static std::string out(const std::string& name) { return temp_->file("out_" + name); }

  // Runs `ckpt consolidate DIR OUT extra...`, expecting success, and reads the file back.
  static Weights consolidate(const std::string& name, const std::string& file, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"ckpt", "consolidate", dir(name), out(file)};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return as_map(engine::read_safetensors(out(file)));
  }

  static std::unique_ptr<test::TempDir> temp_;
};
std::unique_ptr<test::TempDir> CkptCli::temp_;

TEST_F(CkptCli, InfoShowsStageWorldSizeAndEveryFile) {
  const auto text = run_cli({"ckpt", "info", dir("zero3")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "global_step3  (latest)")) << text.out;
  EXPECT_TRUE(contains(text.out, "ZeRO stage 3, saved by 2 rank(s), fp32 training, AdamW at step 3")) << text.out;
  const auto r = run_cli({"ckpt", "info", dir("zero3"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json info = Json::parse(r.out);
  EXPECT_EQ(info["latest"], "global_step3");
  ASSERT_EQ(info["tags"].size(), 1u);
  const Json& tag = info["tags"][0];
  EXPECT_EQ(tag["zero_stage"], 3);
  EXPECT_EQ(tag["world_size"], 2);
  EXPECT_EQ(tag["precision"], "fp32");
  EXPECT_EQ(tag["optimizer"]["type"], "AdamW");
  EXPECT_EQ(tag["optimizer"]["step"], 3);
  EXPECT_EQ(tag["global_steps"], 3);
  EXPECT_EQ(tag["global_samples"], 12);  // 3 steps x global batch 4
  const std::string folder = dir("zero3") + "/global_step3";
  const std::set<std::string> expected{"zero_pp_rank_0_mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_model_states.pt",
                                       "zero_pp_rank_0_mp_rank_00_optim_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt",
                                       "shardscope_manifest.json"};
  EXPECT_EQ(files_in(folder), expected);
  std::int64_t total = 0;
  std::set<std::string> listed;
  for (const auto& f : tag["files"]) {
    listed.insert(f["name"].get<std::string>());
    EXPECT_EQ(f["bytes"], file_size(folder + "/" + f["name"].get<std::string>())) << f["name"];
    EXPECT_TRUE(contains(text.out, f["name"].get<std::string>())) << text.out;
    total += f["bytes"].get<std::int64_t>();
  }
  EXPECT_EQ(listed, expected);
  EXPECT_EQ(tag["total_bytes"], total);
  // The parameter count, against the tensors the consolidation writes (numel summed here).
  std::int64_t numel = 0;
  for (const auto& [name, t] : consolidate("zero3", "count.safetensors")) numel += t.numel();
  EXPECT_EQ(tag["parameters"], numel);

  const Json one = Json::parse(run_cli({"ckpt", "info", dir("zero1"), "--json"}).out)["tags"][0];
  EXPECT_EQ(one["zero_stage"], 1);
  EXPECT_EQ(one["world_size"], 2);
  EXPECT_EQ(one["files"].size(), 4u);  // one model-states file, two optimizer shards, the manifest
  EXPECT_EQ(tag["written_by"], "ShardScope 0.1.0");
  EXPECT_EQ(tag["ds_version"], "0.19.7");
  EXPECT_EQ(tag["consistency"]["checked_against"], "manifest");
  EXPECT_EQ(tag["tied"]["lm_head.weight"], "transformer.wte.weight");
}

TEST_F(CkptCli, ConsolidatedStage1EqualsTheFullWeightsRankZeroSaved) {
  const Weights merged = consolidate("zero1", "zero1.safetensors");
  const Weights full = module_weights(dir("zero1") + "/global_step3");
  ASSERT_EQ(names_of(merged), names_of(full));
  EXPECT_EQ(max_difference(merged, full), 0.0);  // fp32 training: the gathered weights are the master's
  // Hugging Face's GPT2LMHeadModel names; the tied lm_head is left out as save_pretrained does.
  EXPECT_EQ(merged.size(), 28u);  // wte, wpe, ln_f (2) and 12 per layer
  EXPECT_EQ(merged.at("transformer.wte.weight").sizes(), torch::IntArrayRef({64, 32}));
  EXPECT_EQ(merged.at("transformer.h.1.attn.c_attn.weight").sizes(), torch::IntArrayRef({32, 96}));  // Conv1D [in, out]
  EXPECT_EQ(merged.at("transformer.h.1.mlp.c_proj.weight").sizes(), torch::IntArrayRef({128, 32}));
  EXPECT_EQ(merged.count("transformer.ln_f.bias"), 1u);
  EXPECT_EQ(merged.count("lm_head.weight"), 0u);
  const auto header = estimator::read_safetensors_header(out("zero1.safetensors"));
  EXPECT_EQ(header.tensors.front().dtype, "F32");
}

TEST_F(CkptCli, Stage3AgreesWithStage1AndWithOneRank) {
  const Weights three = consolidate("zero3", "zero3.safetensors");
  const Weights one = consolidate("zero1", "zero1b.safetensors");
  const Weights single = module_weights(dir("single") + "/global_step3");
  ASSERT_EQ(names_of(three), names_of(one));
  ASSERT_EQ(names_of(three), names_of(single));
  EXPECT_LT(max_difference(three, one), 1e-6);
  EXPECT_LT(max_difference(three, single), 1e-6);
  EXPECT_LT(max_difference(three, consolidate("single", "single.safetensors")), 1e-6);
}

TEST_F(CkptCli, Bf16HalvesTheBytes) {
  const Weights fp32 = consolidate("zero3", "w32.safetensors");
  const Weights bf16 = consolidate("zero3", "w16.safetensors", {"--dtype", "bf16"});
  ASSERT_EQ(names_of(fp32), names_of(bf16));
  std::int64_t bytes32 = 0, bytes16 = 0;
  for (const auto& [name, t] : fp32) {
    bytes32 += static_cast<std::int64_t>(t.nbytes());
    bytes16 += static_cast<std::int64_t>(bf16.at(name).nbytes());
    EXPECT_EQ(bf16.at(name).scalar_type(), torch::kBFloat16) << name;
    EXPECT_TRUE(torch::equal(bf16.at(name), t.to(torch::kBFloat16))) << name;  // round to nearest even
  }
  EXPECT_EQ(bytes16 * 2, bytes32);
  EXPECT_LT(file_size(out("w16.safetensors")), file_size(out("w32.safetensors")) * 0.52);
  const auto fp16 = consolidate("zero3", "w16h.safetensors", {"--dtype", "fp16"});
  EXPECT_EQ(fp16.at("transformer.wte.weight").scalar_type(), torch::kHalf);
}

TEST_F(CkptCli, MaxShardSizeWritesAnIndexCoveringEveryTensor) {
  const Weights whole = consolidate("zero3", "whole.safetensors");
  const std::string folder = out("sharded");
  const auto r = run_cli({"ckpt", "consolidate", dir("zero3"), folder, "--max-shard-size", "50KB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(folder + "/model.safetensors.index.json");
  const Json index = Json::parse(in);
  std::set<std::string> mapped, shard_files;
  Weights merged;
  std::int64_t data = 0;
  for (const auto& [name, file] : index["weight_map"].items()) {
    mapped.insert(name);
    shard_files.insert(file.get<std::string>());
  }
  EXPECT_EQ(mapped, names_of(whole));
  EXPECT_EQ(shard_files.size(), 4u);  // wpe (131,072 B) alone; 110,080 B of the rest in 50 kB files
  for (const auto& file : shard_files) {
    EXPECT_TRUE(contains(file, "-of-00004.safetensors")) << file;
    std::int64_t bytes = 0;
    for (const auto& [name, t] : engine::read_safetensors(folder + "/" + file)) {
      EXPECT_EQ(index["weight_map"][name], file) << name;
      merged[name] = t;
      bytes += static_cast<std::int64_t>(t.nbytes());
    }
    EXPECT_TRUE(bytes <= 50000 || merged.count("transformer.wpe.weight")) << file;
    data += bytes;
  }
  EXPECT_EQ(index["metadata"]["total_size"], data);
  EXPECT_EQ(max_difference(merged, whole), 0.0);
  EXPECT_TRUE(contains(r.out, "28 tensors, 60,288 parameters")) << r.out;
  // A limit above the model's size writes one model.safetensors, and the old shards go.
  const auto again = run_cli({"ckpt", "consolidate", dir("zero3"), folder, "--max-shard-size", "5GB"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(files_in(folder), std::set<std::string>{"model.safetensors"});
  EXPECT_EQ(max_difference(as_map(engine::read_safetensors(folder + "/model.safetensors")), whole), 0.0);
}

// --deepspeed-version on both actions, on DeepSpeed 0.19.7's own stage-2 checkpoint: each output
// names the rules; zero_to_fp32's releases differ only for non-floating module buffers, which this
// checkpoint has none of, so the weights are the same; an unsupported version is refused (exit 2).
TEST_F(CkptCli, DeepSpeedVersionIsSaidOnEveryOutputAndRefusedWhenUnsupported) {
  const std::string ds = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/checkpoints/data/deepspeed/stage2";
  auto r = run_cli({"ckpt", "info", ds, "--deepspeed-version", "0.19.8"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("rules: DeepSpeed 0.19.8 rules (--deepspeed-version)\n", 0), 0u) << r.out;
  r = run_cli({"ckpt", "info", ds, "--deepspeed-version", "0.19.7", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["deepspeed_version"], "0.19.7") << r.out;

  Weights by_version[2];
  for (int i = 0; i < 2; ++i) {
    const std::string version = i == 0 ? "0.19.7" : "0.19.8";
    const std::string file = out("ds_" + version + ".safetensors");
    r = run_cli({"ckpt", "consolidate", ds, file, "--deepspeed-version", version});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("rules: DeepSpeed " + version + " rules (--deepspeed-version)\n", 0), 0u) << r.out;
    EXPECT_TRUE(contains(r.out, "zero_to_fp32 semantics: DeepSpeed " + version + "'s")) << r.out;
    EXPECT_TRUE(contains(r.out, "no module buffers in this checkpoint")) << r.out;
    by_version[i] = as_map(engine::read_safetensors(file));
  }
  EXPECT_EQ(names_of(by_version[0]), names_of(by_version[1]));
  EXPECT_EQ(max_difference(by_version[0], by_version[1]), 0.0);

  for (const char* action : {"info", "consolidate"}) {
    std::vector<std::string> args{"ckpt", action, ds};
    if (std::string(action) == "consolidate") args.push_back(out("never.safetensors"));
    args.insert(args.end(), {"--deepspeed-version", "0.19.9"});
    r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << action << ": " << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "0.19.7, 0.19.8")) << r.err;
  }
  EXPECT_FALSE(temp_->exists("out_never.safetensors"));
}

TEST_F(CkptCli, BadInputExits2WithTheRemedy) {
  auto r = run_cli({"ckpt", "info", temp_->file("nowhere")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "checkpoint directory '" + temp_->file("nowhere") + "' does not exist")) << r.err;
  r = run_cli({"ckpt", "consolidate", temp_->file("nowhere"), out("x.safetensors")});
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli({"ckpt", "info", dir("zero3") + "/global_step3"});  // a tag's folder, not the checkpoint's
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "give its parent")) << r.err;
  ::mkdir(temp_->file("plain").c_str(), 0755);
  std::ofstream(temp_->file("plain/notes.txt")) << "not a checkpoint";
  r = run_cli({"ckpt", "info", temp_->file("plain")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "is not a checkpoint directory")) << r.err;
  r = run_cli({"ckpt", "consolidate", dir("zero3"), out("x.safetensors"), "--dtype", "fp8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--dtype 'fp8' is not one of fp32, bf16, fp16")) << r.err;
  r = run_cli({"ckpt", "consolidate", dir("zero3"), out("x.safetensors"), "--tag", "global_step30"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "tag 'global_step30' is not in")) << r.err;
  EXPECT_TRUE(contains(r.err, "(its tags: global_step3)")) << r.err;
  r = run_cli({"ckpt", "consolidate", dir("zero3"), out("x.safetensors"), "--max-shard-size", "lots"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--max-shard-size 'lots'")) << r.err;
  r = run_cli({"ckpt", "consolidate", dir("zero3"), out("x.safetensors"), "--max-shard-size", "50KB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "OUT must be a folder")) << r.err;
  EXPECT_EQ(file_size(out("x.safetensors")), -1) << "nothing is written on bad input";
  r = run_cli({"ckpt", "consolidat", dir("zero3")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "did you mean 'consolidate'")) << r.err;
}

// A copy of checkpoint `name` to damage, so the suite's own checkpoints stay intact.
std::string copy_of(const std::string& dir, const std::string& copy) {
  std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
  return copy;
}

TEST_F(CkptCli, InfoChecksEveryRanksFileAndNamesTheFirstThatDoesNotBelong) {
  const std::string mine = "/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt";
  {  // rank 1's shard truncated
    const std::string d = copy_of(dir("zero3"), temp_->file("truncated"));
    ::truncate((d + mine).c_str(), 1000);
    const auto r = run_cli({"ckpt", "info", d});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "zero_pp_rank_1_mp_rank_00_optim_states.pt: does not belong to this save: it has 1000 bytes"))
        << r.out;
    const auto c = run_cli({"ckpt", "consolidate", d, out("truncated.safetensors")});
    EXPECT_EQ(c.exit_code, 1);
    EXPECT_TRUE(contains(c.err, "zero_pp_rank_1_mp_rank_00_optim_states.pt")) << c.err;
    EXPECT_EQ(file_size(out("truncated.safetensors")), -1);
  }
  {  // rank 1's shard linked to a file outside the checkpoint
    const std::string d = copy_of(dir("zero3"), temp_->file("linked"));
    std::filesystem::remove(d + mine);
    std::filesystem::create_symlink("/etc/passwd", d + mine);
    const auto r = run_cli({"ckpt", "info", d});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.out, "(a symbolic link to /etc/passwd)")) << r.out;
    EXPECT_FALSE(contains(r.out, "root:")) << "the linked file's content is never shown";
  }
  {  // a rank-7 file the 2-rank save never had
    const std::string d = copy_of(dir("zero3"), temp_->file("extra"));
    std::filesystem::copy_file(d + mine, d + "/global_step3/zero_pp_rank_7_mp_rank_00_optim_states.pt");
    const auto r = run_cli({"ckpt", "info", d});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.out, "zero_pp_rank_7_mp_rank_00_optim_states.pt: does not belong to this tag")) << r.out;
  }
  {  // the save died before its manifest
    const std::string d = copy_of(dir("zero3"), temp_->file("unfinished"));
    std::filesystem::remove(d + "/global_step3/shardscope_manifest.json");
    const auto r = run_cli({"ckpt", "info", d});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.out, "the save of this tag did not finish (interrupted)")) << r.out;
  }
}

// A resumed run saves a second tag; a rank file copied from the first into it is named by info,
// consolidate and train --load, and the leftovers of an interrupted save go at the next save.
TEST_F(CkptCli, AFileOfAnotherSaveIsNamedAndLeftoversGoAtTheNextSave) {
  const std::string d = copy_of(dir("zero3"), temp_->file("resumed"));
  const std::string leftover = d + "/global_step3/zero_pp_rank_0_mp_rank_00_optim_states.pt.tmp.999999";
  std::ofstream(leftover) << "half of a file";
  auto r = run_cli({"ckpt", "info", d});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // reported, not an error: the tag itself is whole
  EXPECT_TRUE(contains(r.out, "warning: leftover temporary files of an interrupted write")) << r.out;
  EXPECT_TRUE(contains(r.out, "zero_pp_rank_0_mp_rank_00_optim_states.pt.tmp.999999")) << r.out;
  const std::string config = temp_->file("zero3.json");
  r = run_cli({"launch", "--num_procs", "2", "--master_port", std::to_string(free_port()), "--", "--config", config,
               "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab", "64", "--seq-len", "16",
               "--steps", "4", "--load", d, "--save", d});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(file_size(leftover), -1) << "the next save removes an interrupted save's temporaries";
  std::filesystem::copy_file(d + "/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt",
                             d + "/global_step4/zero_pp_rank_1_mp_rank_00_optim_states.pt",
                             std::filesystem::copy_options::overwrite_existing);
  r = run_cli({"ckpt", "info", d});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.out, "global_step4/zero_pp_rank_1_mp_rank_00_optim_states.pt: does not belong to this save: its save id"))
      << r.out;
  r = run_cli({"ckpt", "consolidate", d, out("mixed.safetensors")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "does not belong to this save")) << r.err;
  r = run_cli({"train", "--config", config, "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2",
               "--vocab", "64", "--seq-len", "16", "--steps", "5", "--load", d, "--device", "cpu"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "zero_pp_rank_1_mp_rank_00_optim_states.pt: does not belong to this save")) << r.err;
}

TEST_F(CkptCli, LatestIsNeverFollowedOutOfDirNorEchoed) {
  const std::string d = copy_of(dir("zero1"), temp_->file("latest_tests"));
  const std::string config = temp_->file("zero1.json");
  const std::vector<std::string> train{"train", "--config", config, "--model", "gpt2", "--layers", "2", "--hidden", "32",
                                       "--heads", "2", "--vocab", "64", "--seq-len", "16", "--steps", "4", "--load", d,
                                       "--device", "cpu"};
  std::ofstream(d + "/latest", std::ios::trunc) << "../../other/global_step6";
  auto r = run_cli({"ckpt", "info", d});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "names '../../other/global_step6', which is not a tag of this directory")) << r.err;
  r = run_cli(train);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "which is not a tag of this directory")) << r.err;
  {
    std::ofstream big(d + "/latest", std::ios::binary | std::ios::trunc);
    big.write(std::string(50 << 20, '\x1b').data(), 50 << 20);
  }
  r = run_cli({"ckpt", "info", d});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_LT(r.out.size() + r.err.size(), 4000u) << "a 50 MB latest is not echoed";
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
  std::filesystem::remove(d + "/latest");
  std::filesystem::create_symlink("/dev/zero", d + "/latest");
  r = run_cli({"ckpt", "info", d});  // returns at once: refused by type, never read
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "is a character device")) << r.err;
  r = run_cli({"ckpt", "consolidate", d, out("from_dev_zero.safetensors")});
  EXPECT_EQ(r.exit_code, 2);
}

// The "__metadata__" of a safetensors file's header.
std::map<std::string, std::string> metadata_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char length[8];
  in.read(reinterpret_cast<char*>(length), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];
  std::string text(n, ' ');
  in.read(text.data(), static_cast<std::streamsize>(n));
  return Json::parse(text).at("__metadata__").get<std::map<std::string, std::string>>();
}

TEST_F(CkptCli, ExportsCarryNoPathOfThisMachineUnlessAsked) {
  consolidate("zero1", "private.safetensors");
  auto metadata = metadata_of(out("private.safetensors"));
  for (const auto& [key, value] : metadata) {
    EXPECT_EQ(value.find('/'), std::string::npos) << key << " = " << value;
    EXPECT_FALSE(contains(value, temp_->file(""))) << key;
  }
  EXPECT_EQ(metadata.at("format"), "pt");
  EXPECT_EQ(metadata.at("shardscope_tag"), "global_step3");
  consolidate("zero1", "sourced.safetensors", {"--record-source"});
  metadata = metadata_of(out("sourced.safetensors"));
  EXPECT_TRUE(contains(metadata.at("shardscope_source"), "/zero1/global_step3")) << metadata.at("shardscope_source");
  // An output path that is a link is not replaced.
  std::filesystem::create_symlink("/etc/hostname", out("link.safetensors"));
  const auto r = run_cli({"ckpt", "consolidate", dir("zero1"), out("link.safetensors")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "exists and is a symbolic link")) << r.err;
}

}  // namespace
}  // namespace shardscope::testing
