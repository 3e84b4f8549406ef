// AioHandle on each backend this build has: whole buffers written and read back bit for bit over
// the settings that change how they are cut and submitted (block size, queue depth, threads,
// single_submit, overlap_events); wait() counts operations; failures name the owner, the file,
// the range and the cause; settings out of range name their aio key.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <cstring>
#include <tuple>

#include "aio/aio_handle.hpp"
#include "aio/aligned_buffer.hpp"
#include "aio/backend_probe.hpp"
#include "aio/swap_file.hpp"
#include "aio/swap_folder.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::aio {
namespace {

using test::TempDir;

// The backends that work here; a test on a build or kernel without one says so and skips.
std::vector<IoBackend> working_backends() {
  std::vector<IoBackend> out;
  for (auto b : all_io_backends())
    if (probe_io_backend(b, "/tmp").works) out.push_back(b);
  return out;
}

void fill_pattern(AlignedBuffer& buffer, unsigned seed) {
  auto* bytes = static_cast<unsigned char*>(buffer.data());
  for (std::size_t i = 0; i < buffer.size(); ++i) bytes[i] = static_cast<unsigned char>((i * 131 + seed) % 251);
}

class HandleSettings : public ::testing::TestWithParam<std::tuple<int, int, bool, bool>> {};

TEST_P(HandleSettings, WritesAndReadsBackEveryByte) {
  const auto [threads, depth, single, overlap] = GetParam();
  const auto backends = working_backends();
  if (backends.empty()) GTEST_SKIP() << "no asynchronous I/O backend works here (see `shardscope report`)";
  TempDir dir;
  for (auto backend : backends) {
    SwapFolder folder(dir.path(), dir.path() + "/swap", "rank 3");
    // Not a multiple of the block size or of the thread count: the cut leaves short tails.
    const std::size_t bytes = 5 * 1048576 + 3 * 4096;
    SwapFile file(folder.file("t.swp"), static_cast<std::int64_t>(bytes), folder.direct_io(), "rank 3");
    AlignedBuffer out(bytes), in(bytes);
    fill_pattern(out, static_cast<unsigned>(threads * 7 + depth));
    AioSettings s;
    s.backend = backend;
    s.block_size = 1048576;
    s.queue_depth = depth;
    s.intra_op_parallelism = threads;
    s.single_submit = single;
    s.overlap_events = overlap;
    AioHandle handle(s);
    handle.async_pwrite(file.target(), out.data(), out.size(), 0);
    EXPECT_EQ(handle.pending(), 1u);
    EXPECT_EQ(handle.wait(), 1u);
    handle.async_pread(file.target(), in.data(), in.size(), 0);
    handle.async_pread(file.target(), in.data(), 4096, 0);  // two operations, one wait
    EXPECT_EQ(handle.wait(), 2u) << io_backend_name(backend);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0) << io_backend_name(backend);
  }
}

INSTANTIATE_TEST_SUITE_P(Aio, HandleSettings,
                         ::testing::Values(std::make_tuple(1, 8, false, true), std::make_tuple(1, 2, true, true),
                                           std::make_tuple(3, 4, false, false), std::make_tuple(4, 1, true, false)),
                         [](const auto& info) {
                           return "threads" + std::to_string(std::get<0>(info.param)) + "_qd" +
                                  std::to_string(std::get<1>(info.param)) + (std::get<2>(info.param) ? "_single" : "") +
                                  (std::get<3>(info.param) ? "_overlap" : "_sequential");
                         });

TEST(Aio, AReadPastTheEndNamesTheOwnerTheFileAndTheRange) {
  const auto backends = working_backends();
  if (backends.empty()) GTEST_SKIP() << "no asynchronous I/O backend works here";
  TempDir dir;
  SwapFolder folder(dir.path(), dir.path() + "/swap", "rank 1");
  SwapFile file(folder.file("short.swp"), 8192, folder.direct_io(), "rank 1");
  AlignedBuffer buffer(8192);
  AioSettings s;
  s.backend = backends.front();
  s.owner = "rank 1";
  AioHandle handle(s);
  handle.async_pread(file.target(), buffer.data(), buffer.size(), file.size());  // beyond the file
  try {
    handle.wait();
    FAIL() << "a read past the end of the file succeeded";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1: cannot read '" + file.path() + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("at offset 8192"), std::string::npos) << what;
    EXPECT_NE(what.find("unexpected end of file"), std::string::npos) << what;
  }
  // The handle is usable after a failure, and the error is not reported twice.
  handle.async_pread(file.target(), buffer.data(), buffer.size(), 0);
  EXPECT_EQ(handle.wait(), 1u);
}

TEST(Aio, ADescriptorTheKernelRefusesIsNamedWithItsErrno) {
  const auto backends = working_backends();
  if (backends.empty()) GTEST_SKIP() << "no asynchronous I/O backend works here";
  TempDir dir;
  // A file opened read-only cannot be written: the kernel answers EBADF.
  const std::string path = dir.file("readonly.bin");
  SwapFile made(path + ".src", 4096, true, "");
  const int fd = ::open(made.path().c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  IoTarget target{fd, "/pretend/readonly.swp", false};
  AlignedBuffer buffer(4096);
  for (auto backend : backends) {
    AioSettings s;
    s.backend = backend;
    s.owner = "rank 0";
    AioHandle handle(s);
    handle.async_pwrite(target, buffer.data(), buffer.size(), 0);
    try {
      handle.wait();
      ADD_FAILURE() << io_backend_name(backend) << ": a write to a read-only descriptor succeeded";
    } catch (const IoError& e) {
      EXPECT_EQ(e.error(), EBADF) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 0: cannot write '/pretend/readonly.swp'"), std::string::npos)
          << e.what();
    }
  }
  ::close(fd);
}

TEST(Aio, SettingsOutOfRangeNameTheirKey) {
  const auto message = [](AioSettings s) -> std::string {
    try {
      check_aio_settings(s);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  AioSettings s;
  EXPECT_EQ(message(s), "");
  s.block_size = 1000;
  EXPECT_NE(message(s).find("aio.block_size 1000 is not a positive multiple of 4096"), std::string::npos);
  s = {};
  s.queue_depth = 0;
  EXPECT_NE(message(s).find("aio.queue_depth 0"), std::string::npos);
  s = {};
  s.intra_op_parallelism = 0;
  EXPECT_NE(message(s).find("aio.intra_op_parallelism 0"), std::string::npos);
}

TEST(Aio, MisalignedDirectTransfersAreRefusedBeforeTheKernelSeesThem) {
  const auto backends = working_backends();
  if (backends.empty()) GTEST_SKIP() << "no asynchronous I/O backend works here";
  TempDir dir;
  SwapFile file(dir.file("a.swp"), 8192, true, "");
  AlignedBuffer buffer(8192);
  AioSettings s;
  s.backend = backends.front();
  AioHandle handle(s);
  EXPECT_THROW(handle.async_pwrite(file.target(), static_cast<char*>(buffer.data()) + 512, 4096, 0),
               std::invalid_argument);
  EXPECT_THROW(handle.async_pwrite(file.target(), buffer.data(), 1000, 0), std::invalid_argument);
  EXPECT_EQ(handle.pending(), 0u);
}

TEST(Aio, AMissingBackendIsRefusedWithThePackageToInstall) {
  for (auto backend : all_io_backends()) {
    if (io_backend_compiled_in(backend)) continue;
    try {
      make_io_queue(backend, 4);
      ADD_FAILURE() << io_backend_name(backend) << " is not compiled in, yet a queue was made";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(backend == IoBackend::kLibaio ? "libaio-dev" : "liburing-dev"),
                std::string::npos)
          << e.what();
    }
    const auto probe = probe_io_backend(backend, "/tmp");
    EXPECT_FALSE(probe.compiled_in);
    EXPECT_FALSE(probe.works);
    EXPECT_NE(probe.reason.find("not compiled in"), std::string::npos) << probe.reason;
  }
  for (auto backend : all_io_backends()) {
    if (probe_io_backend(backend, "/tmp").works) {
      EXPECT_NO_THROW(make_io_queue(backend, 4)) << io_backend_name(backend);
    }
  }
}

}  // namespace
}  // namespace shardscope::aio
