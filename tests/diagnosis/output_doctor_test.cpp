// The run doctor on a watched command's output: the lines PyTorch 2.11, NCCL and DeepSpeed 0.19.x
// print when a run breaks, each decoded once into a finding, and the stall clock.
#include <gtest/gtest.h>

#include <string>

#include "diagnosis/output_doctor.hpp"

namespace shardscope::diagnosis {
namespace {

TEST(OutputDoctor, DecodesTheWatchdogTimeoutOnce) {
  OutputDoctor doctor;
  const std::string line =
      "[rank1]:[E1207 06:12:01.123456 4242 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog "
      "caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
      "Timeout(ms)=600000) ran for 600034 milliseconds before timing out.";
  const auto f = doctor.on_line(line, 100);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "hang");
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_NE(f->summary.find("rank 1 waited in ALLREDUCE #42"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("after 600 s (timeout 600 s)"), std::string::npos) << f->summary;
  EXPECT_NE(f->suggested_fix.find("TORCH_NCCL_TRACE_BUFFER_SIZE"), std::string::npos);
  EXPECT_FALSE(doctor.on_line(line, 101)) << "the same timeout is reported once";
  // Another rank's timeout of the same collective is its own finding.
  std::string other = line;
  other.replace(other.find("Rank 1]"), 7, "Rank 2]");
  other.replace(0, 7, "[rank2]");
  const auto g = doctor.on_line(other, 102);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ranks, std::vector<int>{2});
}

TEST(OutputDoctor, DecodesGlooTimeoutsAndLostPeers) {
  OutputDoctor doctor;
  const auto t = doctor.on_line("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                                "Timed out waiting 600000ms for recv operation to complete",
                                10);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, "hang");
  EXPECT_EQ(t->ranks, std::vector<int>{0});
  EXPECT_NE(t->summary.find("600 s for a recv"), std::string::npos) << t->summary;
  const auto p = doctor.on_line("[rank3]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                                "closed by peer [10.0.0.2]:21034",
                                11);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, "peer_lost");
  EXPECT_EQ(p->severity, "warning");
  EXPECT_EQ(p->ranks, std::vector<int>{3});
}

TEST(OutputDoctor, DecodesNcclErrorsWithTheFixForTheirClass) {
  OutputDoctor doctor;
  const auto f = doctor.on_line(
      "[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
      "ProcessGroupNCCL.cpp:3356, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9",
      5);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "nccl_error");
  EXPECT_NE(f->summary.find("rank 1: NCCL error: unhandled system error (NCCL 2.28.9)"), std::string::npos) << f->summary;
  EXPECT_NE(f->suggested_fix.find("NCCL_SOCKET_IFNAME"), std::string::npos);
  const auto r = doctor.on_line(
      "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1200, remote process exited or "
      "there was a network error, NCCL version 2.28.9",
      6);
  ASSERT_TRUE(r);
  EXPECT_NE(r->suggested_fix.find("a peer failed first"), std::string::npos) << r->suggested_fix;
}

TEST(OutputDoctor, ReadsTheAllocatorsOutOfMemoryMessage) {
  OutputDoctorOptions options;
  options.config_path = "ds_config.json";
  OutputDoctor doctor(options);
  doctor.on_steps(12, 1);
  const auto f = doctor.on_line(
      "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
      "139.72 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 138.65 GiB memory in use. "
      "Of the allocated memory 135.20 GiB is allocated by PyTorch, and 512.00 MiB is reserved by PyTorch but "
      "unallocated. If reserved but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
      2);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "cuda_oom");
  EXPECT_EQ(f->first_step, 12);
  EXPECT_NE(f->summary.find("asking for 2.00 GiB on GPU 0 (1.06 GiB free of 139.72 GiB)"), std::string::npos) << f->summary;
  EXPECT_NE(f->evidence.find("allocated by PyTorch: 135.20 GiB"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("reserved but unallocated: 512.00 MiB"), std::string::npos) << f->evidence;
  // 512 MiB cached cannot serve 2 GiB: the fix is a smaller plan, with the GPU's size filled in.
  EXPECT_NE(f->suggested_fix.find("shardscope estimate --config ds_config.json --hf-config config.json --gpu-mem 139.72GiB"),
            std::string::npos)
      << f->suggested_fix;
  EXPECT_EQ(f->suggested_fix.find("expandable_segments"), std::string::npos);
}

TEST(OutputDoctor, FragmentationGetsTheAllocatorSetting) {
  OutputDoctor doctor;
  const auto f = doctor.on_line(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB "
      "of which 3.88 MiB is free. Of the allocated memory 70.43 GiB is allocated by PyTorch, and 8.50 GiB is reserved by "
      "PyTorch but unallocated.",
      1);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->ranks.empty());
  EXPECT_EQ(f->suggested_fix.rfind("the cache holds enough but in pieces: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", 0),
            0u)
      << f->suggested_fix;
}

TEST(OutputDoctor, AKilledRankIsTheHostOomSuspect) {
  OutputDoctor doctor;
  const auto ds = doctor.on_line("[2026-12-07 06:30:00,123] [ERROR] [launch.py:330:sigkill_handler] ['/usr/bin/python3', "
                                 "'-u', 'train.py', '--local_rank=1'] exits with return code = -9",
                                 3);
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->kind, "host_oom");
  const auto torchrun = doctor.on_line("[rank5]: torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) "
                                       "local_rank: 1 (pid: 4242) of binary: /usr/bin/python3",
                                       4);
  ASSERT_TRUE(torchrun);
  EXPECT_EQ(torchrun->ranks, std::vector<int>{5});
  EXPECT_FALSE(doctor.on_line("[launch.py] ['python', 'x.py'] exits with return code = -90", 5));
  EXPECT_FALSE(doctor.on_line("[launch.py] exits with return code = 1", 6));
}

TEST(OutputDoctor, OrdinaryLinesAreNoFinding) {
  OutputDoctor doctor;
  for (const char* line : {"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
                           "steps: 10 loss: 2.3041 iter time (s): 0.112 samples/sec: 35.7",
                           "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}",
                           "Rank 1] and then nothing", ""})
    EXPECT_FALSE(doctor.on_line(line, 1)) << line;
}

TEST(OutputDoctor, AStallIsSilencePastTheBoundWhileTheCommandRuns) {
  OutputDoctor doctor;
  doctor.on_line("starting", 0);
  EXPECT_DOUBLE_EQ(doctor.hang_bound(), 300);  // before the first step
  EXPECT_FALSE(doctor.check(299));
  const auto early = doctor.check(301);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->kind, "stall");
  EXPECT_NE(early->evidence.find("before the first step"), std::string::npos);
  EXPECT_FALSE(doctor.check(400)) << "one finding per silence";
  doctor.on_line("Building extension module fused_adam...", 405);
  EXPECT_FALSE(doctor.check(406)) << "a few seconds' grace: the line may be a timeout's traceback";
  const auto ended = doctor.check(410.5);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->kind, "stall_ended");
  EXPECT_EQ(ended->severity, "info");
  EXPECT_NE(ended->summary.find("after 405 s of silence"), std::string::npos) << ended->summary;
  EXPECT_FALSE(doctor.check(407));
  // Steps every 2 s: the bound becomes max(60, 20 x 2) = 60 s.
  for (int s = 1; s <= 10; ++s) doctor.on_steps(s, 400 + 2.0 * s);
  EXPECT_DOUBLE_EQ(doctor.hang_bound(), 60);
  EXPECT_FALSE(doctor.check(420 + 59));
  const auto later = doctor.check(420 + 61);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->first_step, 10);
  EXPECT_NE(later->summary.find("silent for 61 s"), std::string::npos) << later->summary;
  EXPECT_NE(later->summary.find("after step 10"), std::string::npos) << later->summary;
  // Slow steps raise the bound: 10 s apart -> 200 s.
  for (int s = 11; s <= 30; ++s) doctor.on_steps(s, 500 + 10.0 * (s - 10));
  EXPECT_DOUBLE_EQ(doctor.hang_bound(), 200);
}

// A run with --hang-after 10 whose output fell silent after step 3 (at 100 s), reported at 111 s.
class OutputDoctorAfterAStall : public ::testing::Test {
 protected:
  static OutputDoctorOptions bound_of_10_s() {
    OutputDoctorOptions options;
    options.hang_after_s = 10;
    return options;
  }
  void SetUp() override {
    doctor.on_steps(3, 100);
    ASSERT_TRUE(doctor.check(111));
  }
  OutputDoctor doctor{bound_of_10_s()};
};

TEST_F(OutputDoctorAfterAStall, ATimeoutAfterTheSilenceMakesTheStallAHang) {
  // What a DeepSpeed run on gloo prints when rank 1 skipped an all-reduce (DEEPSPEED_TIMEOUT=1):
  // silence, then rank 0's traceback and gloo's timeout, then rank 1 loses its peer.
  doctor.on_line("[rank0]: Traceback (most recent call last):", 160);
  EXPECT_FALSE(doctor.check(160.2));
  const auto hang = doctor.on_line(
      "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
      "60000ms for recv operation to complete", 160.3);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->kind, "hang");
  EXPECT_NE(hang->evidence.find("it ended the 60 s of silence reported as a stall"), std::string::npos) << hang->evidence;
  EXPECT_TRUE(doctor.on_line("[rank1]: RuntimeError: [../gloo/transport/tcp/pair.cc:547] Connection closed by peer "
                             "[127.0.0.1]:50571", 160.4));
  EXPECT_FALSE(doctor.check(170)) << "no stall_ended: the silence was a hang";
  EXPECT_FALSE(doctor.finish());
}

TEST_F(OutputDoctorAfterAStall, AStallThatEndsAtTheCommandsEndIsSaid) {
  doctor.on_line("saving the last checkpoint ... done", 130);
  const auto ended = doctor.finish();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->kind, "stall_ended");
  EXPECT_FALSE(doctor.finish());
}

TEST_F(OutputDoctorAfterAStall, ANewStepEndsTheStallAtOnce) {
  doctor.on_steps(4, 130);
  const auto ended = doctor.check(130.1);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->kind, "stall_ended");
}

TEST(OutputDoctor, TheUsersBoundWinsOnceStepsCome) {
  OutputDoctorOptions options;
  options.hang_after_s = 5;
  OutputDoctor doctor(options);
  doctor.on_line("starting", 0);
  EXPECT_FALSE(doctor.check(200)) << "before the first step the bound is at least 300 s";
  doctor.on_steps(1, 201);
  EXPECT_FALSE(doctor.check(205));
  const auto f = doctor.check(207);
  ASSERT_TRUE(f);
  EXPECT_NE(f->evidence.find("(--hang-after)"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::diagnosis
