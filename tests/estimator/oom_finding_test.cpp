// The out-of-memory finding a rank makes when its step fails (engine/oom_finding.hpp), from the
// caching allocator's message of PyTorch 2.11 and the run's own config and model.
#include <gtest/gtest.h>

#include <cstdio>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "engine/oom_finding.hpp"

namespace shardscope::engine {
namespace {

constexpr double kGiB = 1073741824.0;

// PyTorch 2.11's text (c10/cuda/CUDACachingAllocator.cpp), as an H100 run printed it.
const std::string kMessage =
    "CUDA out of memory. Tried to allocate 6.14 GiB. GPU 0 has a total capacity of 79.19 GiB of which 3.47 GiB is "
    "free. Including non-PyTorch memory, this process has 75.71 GiB memory in use. Of the allocated memory 72.28 GiB "
    "is allocated by PyTorch, and 2.91 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory "
    "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";

configs::ResolvedConfig config_with_micro_batch(int micro_batch) {
  const auto document = configs::parse_config_text(
      R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro_batch) +
          R"(, "gradient_clipping": 1.0, "bf16": {"enabled": true},
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}}, "zero_optimization": {"stage": 1}})",
      "ds.json");
  configs::ValidateOptions options;
  options.world_size = 1;
  return *configs::validate(document, options).config;
}

ModelSpec gpt2_1_3b() {
  ModelSpec spec = default_model_spec(ModelKind::kGpt2);
  auto& s = spec.transformer.shape;
  s.layers = 24;
  s.hidden = 2048;
  s.heads = 16;
  s.vocab = 50304;
  s.seq_len = 1024;
  return spec;
}

TEST(OomFinding, ReadsTheAllocatorsNumbers) {
  const auto n = parse_allocator_oom(kMessage);
  ASSERT_TRUE(n.requested && n.capacity && n.free && n.allocated && n.reserved_unallocated);
  EXPECT_NEAR(*n.requested, 6.14 * kGiB, 1e6);
  EXPECT_NEAR(*n.capacity, 79.19 * kGiB, 1e6);
  EXPECT_NEAR(*n.free, 3.47 * kGiB, 1e6);
  EXPECT_NEAR(*n.allocated, 72.28 * kGiB, 1e6);
  EXPECT_NEAR(*n.reserved_unallocated, 2.91 * kGiB, 1e6);
  EXPECT_FALSE(parse_allocator_oom("std::bad_alloc").capacity);
}

TEST(OomFinding, TooLargeAMicroBatchGetsTheLargestThatFitsAsTrainFlags) {
  const auto f = out_of_memory_finding(kMessage, config_with_micro_batch(64), gpt2_1_3b(), 1, false, 0, 1, 1e9);
  std::printf("%s\nwhat to do: %s\n", f.summary.c_str(), f.suggested_fix.c_str());
  EXPECT_EQ(f.kind, "cuda_oom");
  EXPECT_EQ(f.severity, "error");
  EXPECT_EQ(f.ranks, std::vector<int>{0});
  EXPECT_EQ(f.first_step, 1);
  EXPECT_NE(f.summary.find("asking for 6.14 GiB"), std::string::npos) << f.summary;
  EXPECT_NE(f.evidence.find("estimator: this plan's device-level bound"), std::string::npos) << f.evidence;
  EXPECT_NE(f.suggested_fix.find("micro-batch 64 -> "), std::string::npos) << f.suggested_fix;
  EXPECT_NE(f.suggested_fix.find("rerun with --set train_micro_batch_size_per_gpu="), std::string::npos) << f.suggested_fix;
  EXPECT_EQ(f.suggested_fix.find("expandable_segments"), std::string::npos) << "2.91 GiB cached < 6.14 GiB asked";
}

TEST(OomFinding, APlanThatFitsPointsAwayFromTheConfig) {
  const auto f = out_of_memory_finding(kMessage, config_with_micro_batch(1), gpt2_1_3b(), 1, false, 0, 3, 1e9);
  EXPECT_NE(f.suggested_fix.find("the memory went elsewhere"), std::string::npos) << f.suggested_fix;
}

}  // namespace
}  // namespace shardscope::engine
