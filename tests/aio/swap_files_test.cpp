// Swap folders and files: DeepSpeed's folder names, one set per rank; a folder starts empty (a
// crashed run's files go) and leaves nothing behind, parents included, once no rank uses them; a
// file has its whole size reserved at creation; an unusable path is named with the cause.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "aio/swap_file.hpp"
#include "aio/swap_folder.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::aio {
namespace {

using test::TempDir;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TEST(SwapFolders, AreDeepSpeedsPerRankFolders) {
  EXPECT_EQ(optimizer_swap_folder("/local_nvme", 3), "/local_nvme/zero_stage_3/optimizer/rank3");
  EXPECT_EQ(optimizer_swap_folder("/local_nvme/", 0), "/local_nvme/zero_stage_3/optimizer/rank0");
  EXPECT_EQ(param_swap_folder("/local_nvme", "bfloat16", 1), "/local_nvme/zero_stage_3/bfloat16params/rank1");
}

TEST(SwapFolders, StartEmptyAndLeaveNothingBehind) {
  TempDir dir;
  const std::string rank0 = optimizer_swap_folder(dir.path(), 0), rank1 = optimizer_swap_folder(dir.path(), 1);
  // What a killed run left in rank 0's folder.
  {
    SwapFolder stale(dir.path(), rank0, "rank 0");
    std::ofstream(stale.file("0_5.tensor.swp")) << "stale";
  }
  ASSERT_FALSE(exists(rank0)) << "a folder whose run ended is removed";
  ::mkdir((dir.path() + "/zero_stage_3").c_str(), 0755);
  ::mkdir((dir.path() + "/zero_stage_3/optimizer").c_str(), 0755);
  ::mkdir(rank0.c_str(), 0755);
  std::ofstream(rank0 + "/0_5.tensor.swp") << "stale";
  {
    SwapFolder zero(dir.path(), rank0, "rank 0");
    EXPECT_FALSE(exists(rank0 + "/0_5.tensor.swp")) << "a previous run's file survived";
    {
      SwapFolder one(dir.path(), rank1, "rank 1");
      SwapFile file(one.file("a.swp"), 4096, one.direct_io(), "rank 1");
      EXPECT_TRUE(exists(one.file("a.swp")));
    }
    EXPECT_FALSE(exists(rank1)) << "rank 1's folder outlived its run";
    EXPECT_TRUE(exists(rank0)) << "rank 1's exit removed rank 0's folder";
  }
  EXPECT_FALSE(exists(dir.path() + "/zero_stage_3")) << "empty parents must go too";
  EXPECT_TRUE(exists(dir.path())) << "nvme_path itself belongs to the user";
  { SwapFolder spelled(dir.path() + "/", dir.path() + "//bench/", ""); }  // as a user may write them
  EXPECT_FALSE(exists(dir.path() + "/bench"));
  EXPECT_TRUE(exists(dir.path())) << "a trailing or doubled slash made nvme_path look like a parent to remove";
}

TEST(SwapFiles, ReserveTheirWholeSizeAndGoWithTheirObject) {
  TempDir dir;
  {
    SwapFile file(dir.file("r.swp"), 3 * 4096 + 5, true, "rank 0");
    EXPECT_EQ(file.size(), 4 * 4096) << "sizes round up to 4 KiB for O_DIRECT";
    struct stat st {};
    ASSERT_EQ(::stat(file.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 4 * 4096);
    EXPECT_GE(st.st_blocks * 512, 4 * 4096) << "the blocks are allocated at creation (fallocate)";
    SwapFile moved = std::move(file);
    EXPECT_TRUE(moved.is_open());
    EXPECT_FALSE(file.is_open());
  }
  EXPECT_FALSE(dir.exists("r.swp"));
}

TEST(SwapFolders, AnUnusablePathIsNamedWithTheCause) {
  TempDir dir;
  std::ofstream(dir.file("plain_file")) << "not a folder";
  try {
    SwapFolder folder(dir.file("plain_file"), optimizer_swap_folder(dir.file("plain_file"), 2), "rank 2");
    FAIL() << "a swap folder below a regular file was created";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.error(), ENOTDIR) << what;
    EXPECT_NE(what.find("rank 2: cannot create swap folder '" + optimizer_swap_folder(dir.file("plain_file"), 2) + "'"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("Not a directory (ENOTDIR)"), std::string::npos) << what;
  }
}

TEST(SwapFolders, KnowTheirFileSystemAndWhetherODirectWorks) {
  TempDir dir;
  SwapFolder folder(dir.path(), dir.path() + "/f", "");
  EXPECT_FALSE(folder.filesystem().empty());
  EXPECT_NE(folder.filesystem(), "unknown");
  // ext4, xfs, btrfs and tmpfs since Linux 6.6 take O_DIRECT; the folder must have found out.
  if (folder.filesystem() == "ext4" || folder.filesystem() == "xfs") {
    EXPECT_TRUE(folder.direct_io());
  }
}

}  // namespace
}  // namespace shardscope::aio
