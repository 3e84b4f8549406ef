// `shardscope watch --deepspeed-version`: the rules that resolve the watched run's config are said
// on stderr, recorded in the session's origin details and applied to the recorded config; an
// unsupported version is refused before anything runs. The watched command is `true`: what is
// checked here is watch's own part, not DeepSpeed's (tests/sessions/deepspeed runs the real one).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::testing {
namespace {

using Json = nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class WatchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // An "amp" block: deprecated under 0.19.7, rejected at parse by 0.19.8 (docs/configs.md).
    std::ofstream(temp_.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "amp": {"enabled": false}})";
  }
  ProcessResult watch(const std::string& name, const std::string& version) const {
    return run_cli({"watch", "--db", db(), "--out", temp_.file("out_" + name), "--name", name, "--deepspeed-version",
                    version, "--", "true", "--deepspeed_config", temp_.file("ds.json")});
  }
  Json session(const std::string& name) const {
    const auto r = run_cli({"sessions", "show", name, "--db", db(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out, nullptr, false)["detail"];
  }
  std::string db() const { return temp_.file("w.db"); }
  test::TempDir temp_;
};

TEST_F(WatchCli, DeepSpeedVersionIsSaidRecordedAndApplied) {
  for (const std::string version : {"0.19.7", "0.19.8"}) {
    const auto r = watch("v" + version, version);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "shardscope watch: rules: DeepSpeed " + version + " rules (--deepspeed-version)\n"))
        << r.err;
    const Json s = session("v" + version);
    EXPECT_EQ(s["origin_details"]["deepspeed_version"], version) << s.dump(2);
    EXPECT_EQ(s["origin_details"]["deepspeed_rules"], "DeepSpeed " + version + " rules (--deepspeed-version)");
  }
  // 0.19.7 resolves the config (its defaults written out); 0.19.8 refuses "amp", so the session
  // keeps the file as written.
  EXPECT_TRUE(session("v0.19.7")["config"].contains("zero_optimization"));
  EXPECT_FALSE(session("v0.19.8")["config"].contains("zero_optimization"));
}

TEST_F(WatchCli, AnUnsupportedVersionIsRefusedBeforeAnythingRuns) {
  const auto r = watch("bad", "0.19.6");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "0.19.7, 0.19.8")) << r.err;
  EXPECT_FALSE(temp_.exists("w.db")) << "no session store was created";
  EXPECT_FALSE(temp_.exists("out_bad"));
}

// The run doctor on a command's output (docs/doctor.md, "Under watch"): DeepSpeed's overflow lines
// at the minimum loss scale become an overflow streak, the allocator's out-of-memory line a
// cuda_oom finding naming the config copy's estimate; both printed live and stored. The command is
// a shell printing DeepSpeed 0.19.7's and PyTorch 2.11's lines.
TEST_F(WatchCli, TheDoctorReadsTheCommandsOutput) {
  std::string script;
  for (int step = 0; step < 6; ++step)
    script += "echo '[2026-12-07 10:00:0" + std::to_string(step) +
              ",000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted "
              "loss scale: 1, reducing to 1'; echo '[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | step: 3.00'; ";
  script += "echo '[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            "capacity of 79.19 GiB of which 1.06 GiB is free. Of the allocated memory 75.20 GiB is allocated by PyTorch, "
            "and 512.00 MiB is reserved by PyTorch but unallocated.' >&2; sleep 1; exit 1";
  const auto r = run_cli({"watch", "--db", db(), "--out", temp_.file("out_doctor"), "--name", "doctor", "--poll-ms", "100",
                          "--", "sh", "-c", script, "sh", "--deepspeed_config", temp_.file("ds.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "shardscope watch: doctor: rank 0: CUDA out of memory asking for 2.00 GiB on GPU 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "--gpu-mem 79.19GiB")) << r.err;
  const auto show = run_cli({"sessions", "show", "doctor", "--db", db(), "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const Json findings = Json::parse(show.out, nullptr, false)["findings"];
  std::map<std::string, Json> by_kind;
  for (const auto& f : findings) by_kind[f["kind"].get<std::string>()] = f;
  ASSERT_TRUE(by_kind.count("overflow_streak")) << findings.dump(2);
  EXPECT_EQ(by_kind["overflow_streak"]["severity"], "error") << "the streak sits at the minimum scale";
  ASSERT_TRUE(by_kind.count("cuda_oom")) << findings.dump(2);
  EXPECT_EQ(by_kind["cuda_oom"]["ranks"], Json::array({0}));
  EXPECT_FALSE(by_kind.count("failed_start")) << "the OOM said why; no second, vaguer finding";
}

}  // namespace
}  // namespace shardscope::testing
