// NVMe offload as a user meets it, on real file systems: a full disk (a small tmpfs) at the start
// of a run and at a checkpoint, a read-only path, a file system without O_DIRECT (ramfs), each
// through `shardscope launch` with two Gloo ranks. The small file systems are mounted in a private
// mount namespace (unshare), so nothing outside the test sees them and they vanish with it; where
// the machine does not allow that (no root, no CAP_SYS_ADMIN) the tests are skipped and say why.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::testing {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Stage 3 on a GPT-2 whose blocks are above DeepSpeed's 1 MiB swap threshold per rank.
const char* kModel[] = {"--model", "gpt2", "--layers", "2", "--hidden", "256", "--heads", "4",
                        "--vocab", "256", "--seq-len", "16"};

std::string stage3_config(const std::string& offload) {
  return R"({"train_micro_batch_size_per_gpu": 2, "steps_per_print": 1, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
    "zero_optimization": {"stage": 3, "sub_group_size": 400000)" +
         (offload.empty() ? "" : ", " + offload) + "}}";
}

std::string nvme_optimizer(const std::string& path) {
  return R"("offload_optimizer": {"device": "nvme", "nvme_path": ")" + path + R"("})";
}

class NvmeCli : public ::testing::Test {
 protected:
  // The launch of `ranks` ranks training `steps` steps of the swap-sized GPT-2 under `config`.
  std::vector<std::string> launch(const std::string& config, int ranks, int steps,
                                  const std::vector<std::string>& more = {}) {
    const std::string file = temp_.file("ds" + std::to_string(++configs_) + ".json");
    std::ofstream(file) << config;
    std::vector<std::string> args{SHARDSCOPE_CLI_PATH, "launch", "--master_port", std::to_string(test::free_port()),
                                  "--num_procs", std::to_string(ranks), "--session", temp_.file("runs.db"), "--",
                                  "--config", file, "--steps", std::to_string(steps)};
    args.insert(args.end(), std::begin(kModel), std::end(kModel));
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // `script` (sh) run in a private mount namespace after mounting `fs` (with `options`) on
  // mount(); every "$@"-style command is spelled out by the caller.
  ProcessResult in_namespace(const std::string& fs, const std::string& options, const std::string& script) {
    return run_process({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                        "mount -t " + fs + " -o " + options + " " + fs + " '" + mount() + "' && " + script});
  }
  std::string mount() const { return temp_.file("disk"); }
  static std::string quoted(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += (out.empty() ? "'" : " '") + a + "'";
    return out;
  }
  void SetUp() override {
    ::mkdir(mount().c_str(), 0755);
    const auto probe = run_process({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                    "mount -t tmpfs -o size=1m tmpfs '" + mount() + "'"});
    namespaces_ = probe.exit_code == 0;
    why_not_ = probe.err;
  }
  bool namespaces_ = false;
  std::string why_not_;
  test::TempDir temp_;
  int configs_ = 0;
};

#define SKIP_WITHOUT_NAMESPACES()                                                                              \
  if (!namespaces_)                                                                                            \
  GTEST_SKIP() << "cannot mount a small file system in a private mount namespace here (needs root or "        \
                  "CAP_SYS_ADMIN and unshare): "                                                               \
               << why_not_

TEST_F(NvmeCli, AFullDiskAtTheStartNamesTheFileTheRankAndTheCauseAndStopsEveryRank) {
  SKIP_WITHOUT_NAMESPACES();
  // Each rank's swapped master and AdamW state need about 10 MiB; 3 MiB holds neither rank's.
  const auto r = in_namespace("tmpfs", "size=3m", quoted(launch(stage3_config(nvme_optimizer(mount())), 2, 3)));
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "No space left on device (ENOSPC)")) << r.err;
  EXPECT_TRUE(contains(r.err, ": cannot reserve ")) << r.err;
  EXPECT_TRUE(contains(r.err, "for swap file '" + mount() + "/zero_stage_3/optimizer/rank")) << r.err;
  EXPECT_TRUE(contains(r.err, "(the first rank to fail)")) << r.err;
  EXPECT_FALSE(contains(r.out, "step=1,")) << "a rank trained on a disk too small for its state";
  auto store = sessions::Store::open(temp_.file("runs.db"));
  const auto all = sessions::list_sessions(store);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, "failed");
}

TEST_F(NvmeCli, AReadOnlyPathIsNamedWithTheCause) {
  SKIP_WITHOUT_NAMESPACES();
  const auto r = in_namespace("tmpfs", "ro,size=1m", quoted(launch(stage3_config(nvme_optimizer(mount())), 2, 2)));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "cannot create swap folder '" + mount() + "/zero_stage_3/optimizer/rank")) << r.err;
  EXPECT_TRUE(contains(r.err, "Read-only file system (EROFS)")) << r.err;
}

TEST_F(NvmeCli, AFullDiskAtACheckpointLeavesTheLastOneLoadable) {
  SKIP_WITHOUT_NAMESPACES();
  // Swap (~20 MiB for both ranks) and the step-2 checkpoint (~21 MiB) fit in 56 MiB; the step-4
  // one does not. The resume runs in the same namespace: the file system goes with it.
  const std::string ckpt = mount() + "/ckpt";
  const auto train = launch(stage3_config(nvme_optimizer(mount())), 2, 6, {"--save", ckpt, "--save-every", "2"});
  const auto resume = launch(stage3_config(R"("offload_optimizer": {"device": "cpu"})"), 2, 3, {"--load", ckpt});
  const auto r = in_namespace("tmpfs", "size=56m",
                              quoted(train) + "; echo \"train exit $?\"; echo \"latest $(cat '" + ckpt + "/latest')\"; " +
                                  quoted(resume) + "; echo \"resume exit $?\"");
  EXPECT_TRUE(contains(r.out, "[Rank 0] Saved checkpoint " + ckpt + "/global_step2")) << r.out;
  EXPECT_FALSE(contains(r.out, "train exit 0")) << r.out;
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(contains(r.err, ckpt + "/global_step4/zero_pp_rank_")) << "the error names the checkpoint file: " << r.err;
  EXPECT_TRUE(contains(r.err, ".pt: cannot be written through its temporary")) << r.err;
  EXPECT_TRUE(contains(r.err, "(the first rank to fail)")) << r.err;
  EXPECT_TRUE(contains(r.out, "latest global_step2")) << r.out;
  EXPECT_TRUE(contains(r.out, "Loaded checkpoint " + ckpt + "/global_step2 at step 2")) << r.out;
  EXPECT_TRUE(contains(r.out, "[rank 0] [Rank 0] step=3,")) << r.out;
  EXPECT_TRUE(contains(r.out, "resume exit 0")) << r.out << r.err;
}

TEST_F(NvmeCli, AFileSystemWithoutODirectSwapsThroughThePageCache) {
  SKIP_WITHOUT_NAMESPACES();
  const auto r = in_namespace("ramfs", "mode=755", quoted(launch(stage3_config(nvme_optimizer(mount())), 1, 2)) +
                                                       " && ls -A '" + mount() + "' | wc -l");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(ramfs, page cache: no O_DIRECT there")) << r.out;
  EXPECT_TRUE(contains(r.out, "step=2,")) << r.out;
  EXPECT_TRUE(r.out.size() >= 2 && r.out.substr(r.out.size() - 2) == "0\n") << "swap files left behind: " << r.out;
}

}  // namespace
}  // namespace shardscope::testing
