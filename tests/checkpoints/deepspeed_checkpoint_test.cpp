// DeepSpeedCheckpoint on checkpoints DeepSpeed 0.19.7 wrote (data/deepspeed, made by
// make_fixtures.py: 2 ranks, stages 0-3, 495 parameters so ZeRO pads) against DeepSpeed's own
// reconstruction of their weights, and on checkpoints the writer makes, tampered with as a
// crash, a copy or a hostile user would: every rank's file is checked and the first that does not
// belong is named.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/checkpoint_folder.hpp"
#include "checkpoints/deepspeed_checkpoint.hpp"
#include "checkpoints/deepspeed_checkpoint_writer.hpp"
#include "tests/checkpoints/checkpoint_test_support.hpp"

namespace shardscope::checkpoints {
namespace {

namespace fs = std::filesystem;
using test::contains;

std::string fixture(int stage) {
  return std::string(SHARDSCOPE_TEST_DATA_DIR) + "/deepspeed/stage" + std::to_string(stage) + "/global_step2";
}

std::string error_of(const std::string& folder, OpenOptions options = {}) {
  try {
    DeepSpeedCheckpoint{folder, options};
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(DeepSpeedCheckpoint, ReadsDeepSpeedsOwnCheckpointsAsDeepSpeedReconstructsThem) {
  std::ifstream in(std::string(SHARDSCOPE_TEST_DATA_DIR) + "/deepspeed/expected.json");
  const auto expected = nlohmann::json::parse(in);
  std::vector<float> exp_avg_at_stage0;
  for (int stage = 0; stage < 4; ++stage) {
    OpenOptions options;
    options.verify_content = true;
    const DeepSpeedCheckpoint c(fixture(stage), options);
    const auto& s = c.summary();
    EXPECT_EQ(s.zero_stage, stage);
    EXPECT_EQ(s.world_size, 2);
    EXPECT_EQ(s.written_by, "DeepSpeed 0.19.7");
    EXPECT_EQ(s.precision, "fp32");
    EXPECT_EQ(s.optimizer_type, "AdamW");
    EXPECT_EQ(s.optimizer_step, 2);
    EXPECT_EQ(s.global_steps, 2);
    EXPECT_EQ(s.state_names, (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
    EXPECT_EQ(s.parameter_count(), 495);
    ASSERT_EQ(s.shared.size(), 1u);
    EXPECT_EQ(s.shared[0], std::make_pair(std::string("lm_head.weight"), std::string("transformer.wte.weight")));
    EXPECT_EQ(c.part_count(), stage == 0 ? 1 : 2);
    const auto fp32 = c.canonical("fp32");
    const auto& want = expected["stage" + std::to_string(stage)];
    ASSERT_EQ(want.size(), s.parameters.size());
    for (const auto& p : s.parameters) {
      const auto& values = want.at(p.name);
      ASSERT_EQ(static_cast<std::int64_t>(values.size()), p.numel) << p.name;
      for (std::int64_t i = 0; i < p.numel; ++i)
        ASSERT_EQ(fp32[static_cast<std::size_t>(p.offset + i)], values[static_cast<std::size_t>(i)].get<float>())
            << p.name << "[" << i << "] at stage " << stage;
    }
    // The same 2 steps at every stage: the optimizer moments agree across the four layouts.
    const auto exp_avg = c.canonical("exp_avg");
    if (stage == 0) exp_avg_at_stage0 = exp_avg;
    for (std::size_t i = 0; i < exp_avg.size(); ++i)
      ASSERT_NEAR(exp_avg[i], exp_avg_at_stage0[i], 1e-6 + 1e-5 * std::abs(exp_avg_at_stage0[i])) << "stage " << stage;
  }
}

TEST(DeepSpeedCheckpoint, NamesADeepSpeedRankFileOfAnotherSave) {
  const test::Folder dir;
  const std::string folder = dir.file("global_step2");
  fs::copy(fixture(1), folder);
  // Rank 1's optimizer file from the stage-2 save of the same run.
  fs::copy_file(fixture(2) + "/zero_pp_rank_1_mp_rank_00_optim_states.pt",
                folder + "/zero_pp_rank_1_mp_rank_00_optim_states.pt", fs::copy_options::overwrite_existing);
  std::string e = error_of(folder);
  EXPECT_TRUE(contains(e, "zero_pp_rank_1_mp_rank_00_optim_states.pt: does not belong to this tag (rank 1)")) << e;
  EXPECT_TRUE(contains(e, "saved at ZeRO stage 2, rank 0's at 1")) << e;
  // A rank the save never had.
  fs::copy_file(fixture(1) + "/zero_pp_rank_1_mp_rank_00_optim_states.pt",
                folder + "/zero_pp_rank_1_mp_rank_00_optim_states.pt", fs::copy_options::overwrite_existing);
  fs::copy_file(folder + "/zero_pp_rank_1_mp_rank_00_optim_states.pt", folder + "/zero_pp_rank_7_mp_rank_00_optim_states.pt");
  e = error_of(folder);
  EXPECT_TRUE(contains(e, "zero_pp_rank_7_mp_rank_00_optim_states.pt: does not belong to this tag")) << e;
  fs::remove(folder + "/zero_pp_rank_7_mp_rank_00_optim_states.pt");
  // A missing rank.
  fs::remove(folder + "/zero_pp_rank_1_mp_rank_00_optim_states.pt");
  e = error_of(folder);
  EXPECT_TRUE(contains(e, "was saved by 2 ranks but has no optimizer file of rank 1")) << e;
}

// A stage-3 checkpoint of 3 ranks, written by the writer as the engine writes it: parameters of
// 5, 7 and 1 elements (every one padded differently), canonical values 0, 1, 2, ...
struct Written {
  std::vector<float> canonical;
  Manifest manifest;
};
Written write_checkpoint(const std::string& folder, const std::string& save_id,
                         configs::DeepSpeedVersion release = configs::DeepSpeedVersion::k0_19_7) {
  SaveDescription d;
  d.release = release;
  d.zero_stage = 3;
  d.world_size = 3;
  d.parameters = {{"a", {5}, 0, 0}, {"b", {7}, 0, 0}, {"c", {1}, 0, 0}};
  assign_offsets(d.parameters, "test");
  d.global_steps = 4;
  d.optimizer_type = "AdamW";
  d.optimizer_step = 4;
  d.save_id = save_id;
  d.shardscope_version = "test";
  Written w;
  for (int i = 0; i < 13; ++i) w.canonical.push_back(static_cast<float>(i));
  w.manifest = {save_id, "global_step4", 4, 3, 3, "test", {}};
  for (int rank = 0; rank < 3; ++rank) {
    d.rank = rank;
    std::vector<float> part(static_cast<std::size_t>(optimizer_part_numel(d)), 0.0f), moments(part.size());
    for (const auto& r : optimizer_part_runs(d))
      for (std::int64_t i = 0; i < r.count; ++i) {
        part[static_cast<std::size_t>(r.part + i)] = w.canonical[static_cast<std::size_t>(r.canonical + i)];
        moments[static_cast<std::size_t>(r.part + i)] = -w.canonical[static_cast<std::size_t>(r.canonical + i)];
      }
    const std::string model = model_states_file_name(3, rank), optim = optim_states_file_name(false, rank);
    const auto m = write_model_states(folder + "/" + model, d, {}, nullptr);
    const auto o = write_optimizer_states(folder + "/" + optim, d, part.data(), {{"exp_avg", moments.data()}});
    w.manifest.files.push_back({model, rank, m.size, m.crc32});
    w.manifest.files.push_back({optim, rank, o.size, o.crc32});
  }
  write_manifest(folder, w.manifest);
  return w;
}

TEST(DeepSpeedCheckpoint, TheLayoutFollowsTheChosenRelease) {
  // 0.19.8's _common_checkpoint_state no longer writes sparse_tensor_module_names; both stamp
  // their own ds_version (runtime/engine.py).
  for (const auto release : {configs::DeepSpeedVersion::k0_19_7, configs::DeepSpeedVersion::k0_19_8}) {
    const test::Folder dir;
    write_checkpoint(dir.file("global_step4"), new_save_id(), release);
    const DeepSpeedCheckpoint c(dir.file("global_step4"), {});
    EXPECT_EQ(c.summary().ds_version, configs::to_string(release));
    const TorchFile model(dir.file("global_step4/" + model_states_file_name(3, 0)));
    EXPECT_EQ(model.root().get("sparse_tensor_module_names").has_value(),
              release == configs::DeepSpeedVersion::k0_19_7);
    const TorchFile optim(dir.file("global_step4/" + optim_states_file_name(false, 0)));
    EXPECT_EQ(optim.root().get("ds_version")->as_string(), configs::to_string(release));
  }
}

TEST(DeepSpeedCheckpoint, ReadsWhatTheWriterWroteAtAnyPadding) {
  const test::Folder dir;
  const auto w = write_checkpoint(dir.file("global_step4"), new_save_id());
  OpenOptions options;
  options.verify_content = true;
  const DeepSpeedCheckpoint c(dir.file("global_step4"), options);
  EXPECT_EQ(c.summary().written_by, "ShardScope test");
  EXPECT_EQ(c.summary().zero_stage, 3);
  EXPECT_EQ(c.summary().world_size, 3);
  EXPECT_EQ(c.canonical("fp32"), w.canonical);
  const auto moments = c.canonical("exp_avg");
  for (std::size_t i = 0; i < moments.size(); ++i) EXPECT_EQ(moments[i], -w.canonical[i]);
  EXPECT_TRUE(c.summary().manifest.has_value());
}

TEST(DeepSpeedCheckpoint, NamesTheFirstFileThatDoesNotBelongToTheSave) {
  const test::Folder dir;
  const std::string folder = dir.file("global_step4"), other = dir.file("global_step2");
  write_checkpoint(folder, new_save_id());
  write_checkpoint(other, new_save_id());
  const std::string rank1 = folder + "/" + optim_states_file_name(false, 1);
  const auto original = test::read_bytes(rank1);
  // Copied in from another save of the same shape: same size, another save id.
  fs::copy_file(other + "/" + optim_states_file_name(false, 1), rank1, fs::copy_options::overwrite_existing);
  std::string e = error_of(folder);
  EXPECT_TRUE(contains(e, rank1 + ": does not belong to this save: its save id is")) << e;
  // Truncated.
  test::write_bytes(rank1, std::vector<char>(original.begin(), original.end() - 100));
  e = error_of(folder);
  EXPECT_TRUE(contains(e, rank1 + ": does not belong to this save: it has " + std::to_string(original.size() - 100) +
                              " bytes, the manifest says " + std::to_string(original.size()))) << e;
  // Replaced by a link to a file outside the checkpoint.
  fs::remove(rank1);
  fs::create_symlink("/etc/passwd", rank1);
  e = error_of(folder);
  EXPECT_TRUE(contains(e, "(a symbolic link to /etc/passwd)")) << e;
  fs::remove(rank1);
  // One byte changed, size kept: only the CRC-32 sees it.
  auto flipped = original;
  flipped[flipped.size() / 2] ^= 0x01;
  test::write_bytes(rank1, flipped);
  OpenOptions verify;
  verify.verify_content = true;
  e = error_of(folder, verify);
  EXPECT_TRUE(contains(e, rank1 + ": does not match this save's manifest: its CRC-32 differs")) << e;
  test::write_bytes(rank1, original);
  EXPECT_EQ(error_of(folder, verify), "");
  // A rank the save never had.
  fs::copy_file(rank1, folder + "/zero_pp_rank_7_mp_rank_00_optim_states.pt");
  e = error_of(folder);
  EXPECT_TRUE(contains(e, "zero_pp_rank_7_mp_rank_00_optim_states.pt: does not belong to this tag")) << e;
}

// Issue 31: a stage-2 `train --load` accepted a model-states file whose CRC-32 `ckpt info` reported
// as wrong (the model states are read on every open, their CRC-32 was checked only by ckpt info).
TEST(DeepSpeedCheckpoint, AModelStatesFileThatChangedIsRefusedOnEveryOpen) {
  const test::Folder dir;
  const std::string folder = dir.file("global_step4");
  write_checkpoint(folder, new_save_id());
  const std::string states = folder + "/" + model_states_file_name(3, 0);  // rank 0's, read on every open
  ASSERT_TRUE(fs::exists(states)) << states;
  const auto original = test::read_bytes(states);
  auto flipped = original;
  flipped[flipped.size() - 200] ^= 0x01;  // inside the stored data, before the zip's directory
  test::write_bytes(states, flipped);
  const std::string e = error_of(folder);  // no verify_content: what train --load does
  EXPECT_TRUE(contains(e, states + ": ")) << e;
  EXPECT_FALSE(e.empty()) << "a changed model-states file was accepted";
  test::write_bytes(states, original);
  EXPECT_EQ(error_of(folder), "");
}

TEST(DeepSpeedCheckpoint, AnInterruptedSaveSaysSo) {
  const test::Folder dir;
  const std::string folder = dir.file("global_step4");
  write_checkpoint(folder, new_save_id());
  fs::remove(folder + "/" + kManifestFileName);  // the save died before its manifest
  std::ofstream(folder + "/zero_pp_rank_2_mp_rank_00_optim_states.pt.tmp.4242") << "half a file";
  const std::string e = error_of(folder);
  EXPECT_TRUE(contains(e, "did not finish (interrupted)")) << e;
  EXPECT_TRUE(contains(e, "zero_pp_rank_2_mp_rank_00_optim_states.pt.tmp.4242")) << e;
  EXPECT_FALSE(contains(e, "no 'optimizer' entry")) << e;
  const auto left = leftover_temporaries(folder);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].second, 11u);
  const auto removed = remove_leftover_temporaries(folder, [](const std::string&) { return true; });
  EXPECT_EQ(removed.size(), 1u);
  EXPECT_TRUE(leftover_temporaries(folder).empty());
}

TEST(CheckpointFolder, LatestIsReadBoundedAndStaysInsideTheDirectory) {
  const test::Folder dir;
  EXPECT_FALSE(read_latest_tag(dir.path()));
  std::ofstream(dir.file("latest")) << "global_step3\n";
  EXPECT_EQ(read_latest_tag(dir.path()).value(), "global_step3");
  const auto refused = [&](const std::string& text) {
    try {
      read_latest_tag(dir.path());
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.kind(), CheckpointErrorKind::kUnreadable);
      EXPECT_TRUE(contains(e.what(), text)) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "latest accepted, expected: " << text;
    return std::string();
  };
  std::ofstream(dir.file("latest"), std::ios::trunc) << "../../other/global_step6";
  refused("which is not a tag of this directory: it holds '/'");
  std::ofstream(dir.file("latest"), std::ios::trunc) << "..";
  refused("names the directory itself or its parent");
  std::ofstream(dir.file("latest"), std::ios::trunc) << std::string("step\x01\x1b[2J", 9);
  const std::string escaped = refused("control characters");
  EXPECT_TRUE(contains(escaped, "\\x01\\x1b[2J")) << escaped;  // shown escaped, never raw
  {  // 50 MB of binary: refused by size, not one byte of it echoed
    std::ofstream big(dir.file("latest"), std::ios::binary | std::ios::trunc);
    big.write(std::string(50 << 20, '\x7f').data(), 50 << 20);
  }
  const std::string big = refused("holds 52428800 bytes");
  EXPECT_LT(big.size(), 400u);
  fs::remove(dir.file("latest"));
  fs::create_symlink("/dev/zero", dir.file("latest"));
  refused("is a character device, not a regular file (a symbolic link to /dev/zero)");
  fs::remove(dir.file("latest"));
  ASSERT_EQ(::mkfifo(dir.file("latest").c_str(), 0600), 0);
  refused("is a FIFO (named pipe), not a regular file");  // refused without waiting for a writer
}

TEST(CheckpointFolder, TagsAreRealSubFoldersWithAModelStatesFile) {
  const test::Folder dir;
  fs::create_directories(dir.file("global_step1"));
  std::ofstream(dir.file("global_step1/mp_rank_00_model_states.pt")) << "x";
  fs::create_directories(dir.file("notes"));
  fs::create_directory_symlink(dir.file("global_step1"), dir.file("linked"));
  EXPECT_EQ(checkpoint_tags(dir.path()), std::vector<std::string>{"global_step1"});
}

// Issue 31: a save interrupted before rank 0's model states existed left its folder and .tmp files
// forever, listed by nothing; now it is a tag (an incomplete one, which opening says), so `ckpt
// info` shows it and the next save's sweep of every tag's temporaries removes them.
TEST(CheckpointFolder, AFolderOfAnInterruptedSavesTemporariesIsATag) {
  const test::Folder dir;
  fs::create_directories(dir.file("global_step1"));
  std::ofstream(dir.file("global_step1/mp_rank_00_model_states.pt")) << "x";
  fs::create_directories(dir.file("global_step2"));
  std::ofstream(dir.file("global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt.tmp.4242")) << "half";
  fs::create_directories(dir.file("scratch"));
  std::ofstream(dir.file("scratch/notes.txt.tmp.1")) << "not a checkpoint file";
  EXPECT_EQ(checkpoint_tags(dir.path()), (std::vector<std::string>{"global_step1", "global_step2"}));
  try {
    DeepSpeedCheckpoint c(dir.file("global_step2"));
    FAIL() << "an interrupted save opened";
  } catch (const CheckpointError& e) {
    EXPECT_TRUE(contains(e.what(), "not a complete checkpoint tag")) << e.what();
    EXPECT_TRUE(contains(e.what(), "leftover temporary files of an interrupted write")) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::checkpoints
