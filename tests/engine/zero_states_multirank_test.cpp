// The estimator's model states per rank against the engine's own byte count, exactly: CPU gloo
// runs at ZeRO stages 1-3 on 2, 4 and 8 ranks, fp32 and bf16. On the CPU `shardscope train` counts
// the tensors a rank holds for training (engine/training_telemetry.cpp, sample_memory) and logs it
// as `[memory measured] allocated_peak_bytes=`, beside the prediction it logged at its start,
// `[memory prediction] model_states_bytes=` (issue 27, item 4).
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>

#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::testing {
namespace {

long long first_number(const std::string& text, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(key + "=([0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

class ZeroStatesMultirank : public ::testing::TestWithParam<std::tuple<int, int, const char*>> {};

TEST_P(ZeroStatesMultirank, EstimatorEqualsTheEngineToTheByte) {
  const auto [stage, ranks, precision] = GetParam();
  // A port of its own: the 18 cases run in parallel under ctest.
  std::vector<std::string> args = {"launch", "--master_port", std::to_string(test::free_port()), "--num_procs",
                                   std::to_string(ranks), "--",
                                   "--config", std::string(SHARDSCOPE_SOURCE_DIR) + "/resources/demo/ds_config.json",
                                   "--set", "zero_optimization.stage=" + std::to_string(stage),
                                   "--layers", "2", "--hidden", "64", "--vocab", "512", "--seq-len", "64", "--steps", "2"};
  if (std::string(precision) == "bf16") args.insert(args.end(), {"--set", "bf16.enabled=true"});
  const auto r = run_cli(args, {"OMP_NUM_THREADS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string text = r.out + r.err;
  const long long predicted = first_number(text, "model_states_bytes");
  const long long held = first_number(text, "allocated_peak_bytes");
  ASSERT_GT(predicted, 0) << text;
  EXPECT_EQ(predicted, held) << "stage " << stage << ", " << ranks << " ranks, " << precision;
}

INSTANTIATE_TEST_SUITE_P(StagesRanksPrecisions, ZeroStatesMultirank,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(2, 4, 8),
                                            ::testing::Values("fp32", "bf16")));

}  // namespace
}  // namespace shardscope::testing
