// The estimator against the held GPU sweeps (docs/estimator.md, "Measured on a held sweep"):
// every row of tests/estimator/data/gpu_sweep_h200.jsonl (an H200) and gpu_sweep_h100.jsonl (the
// same cases that fit an 80 GB H100) is a real single-GPU `shardscope train` run
// (scripts/estimator_sweep_gpu.py) with its measured allocator, reserved and device-level peaks.
// Both sweeps are held to the same bars. Each row's prediction is recomputed here through the path `train` takes
// (engine::predict_memory on the row's ds_config and model flags), and the bars are checked:
// mean absolute error against the allocator peak, the largest error, and never an under-prediction
// of the device-level peak by more than 2 % by the bound the fit is judged on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "engine/memory_prediction.hpp"
#include "engine/models/model_spec.hpp"
#include "estimator/config_adapter.hpp"
#include "estimator/estimate.hpp"
#include "estimator/host_memory.hpp"
#include "estimator/peak_memory.hpp"

namespace shardscope::engine {
namespace {

using nlohmann::json;
constexpr double kGiB = 1073741824.0;

struct SweepRow {
  json row;
  MemoryPrediction prediction;
  estimator::PeakMemoryEstimate peak;  ///< the plan's peak as `estimate` reckons it, calibration flag included
  double allocated = 0, device = 0;
  double error() const { return (prediction.total_bytes - allocated) / allocated; }
};

std::vector<json> read_rows(const std::string& file = "gpu_sweep_h200.jsonl") {
  std::ifstream in(std::string(SHARDSCOPE_TEST_DATA_DIR) + "/" + file);
  std::vector<json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  if (!rows.empty()) rows.erase(rows.begin());  // the header: date, commit, versions
  return rows;
}

// The model the row's flags describe, as `shardscope train` builds it from the same flags.
ModelSpec spec_of(const json& row) {
  const auto& flags = row.at("flags");
  auto value = [&](const std::string& name) -> std::string {
    for (std::size_t i = 0; i + 1 < flags.size(); ++i)
      if (flags[i] == "--" + name) return flags[i + 1];
    return "";
  };
  ModelSpec spec = default_model_spec(parse_model_kind(value("model"), "--model"));
  auto& s = spec.transformer.shape;
  s.layers = std::stoll(value("layers"));
  s.hidden = std::stoll(value("hidden"));
  s.heads = std::stoll(value("heads"));
  s.kv_heads = value("kv-heads").empty() ? s.heads : std::stoll(value("kv-heads"));
  s.ffn = std::stoll(value("ffn"));
  s.vocab = std::stoll(value("vocab"));
  s.seq_len = std::stoll(value("seq-len"));
  if (s.max_positions > 0 && s.max_positions < s.seq_len) s.max_positions = s.seq_len;
  spec.activation_checkpointing = row.at("checkpointing").get<bool>();
  validate_model_spec(spec);
  return spec;
}

configs::ResolvedConfig config_of(const json& row) {
  const auto document = configs::parse_config_text(row.at("ds_config").dump(), row.at("name").get<std::string>());
  configs::ValidateOptions options;
  options.world_size = 1;
  const auto result = configs::validate(document, options);
  EXPECT_FALSE(result.has_errors()) << row.at("name");
  return *result.config;
}

// The same plan through the estimator's own entry (what `shardscope estimate` prints for it).
estimator::PeakMemoryEstimate peak_of(const configs::ResolvedConfig& config, const ModelSpec& spec) {
  estimator::EstimateOptions o;
  estimator::apply_resolved_config(config, o);
  o.workload.seq_len = spec.transformer.shape.seq_len;
  if (spec.activation_checkpointing) o.workload.checkpointing = estimator::ActivationCheckpointing::kFull;
  const auto e = estimator::run_estimate(estimator::describe_transformer(spec.transformer.shape, "sweep"), o);
  for (const auto& p : e.plans)
    if (p.plan == *o.requested_plan) return p.peak;
  ADD_FAILURE() << "no row for the requested plan";
  return {};
}

std::vector<SweepRow> predicted_rows(const std::string& file = "gpu_sweep_h200.jsonl") {
  std::vector<SweepRow> out;
  for (const auto& row : read_rows(file)) {
    if (row.at("rc") != 0 || row.at("measured").is_null()) continue;
    SweepRow r;
    r.row = row;
    const auto config = config_of(row);
    const auto spec = spec_of(row);
    r.prediction = predict_memory(config, spec, 1, spec.activation_checkpointing || config.activation_checkpointing.requested);
    r.peak = peak_of(config, spec);
    r.allocated = row.at("measured").at("allocated_peak_bytes").get<double>();
    r.device = row.at("measured").at("device_peak_bytes").get<double>();
    out.push_back(std::move(r));
  }
  return out;
}

bool offloads(const json& row) { return row.at("plan").at("offload_optimizer") != "none"; }

// Each bar holds on each GPU's sweep.
class GpuSweepBars : public ::testing::TestWithParam<std::string> {
 protected:
  std::vector<SweepRow> rows() const { return predicted_rows(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(EachGpu, GpuSweepBars, ::testing::Values("gpu_sweep_h200.jsonl", "gpu_sweep_h100.jsonl"),
                         [](const auto& info) { return info.param.substr(10, 4); });  // gpu_sweep_{h200,h100}

TEST_P(GpuSweepBars, HasTheHeldConfigurations) {
  const auto rows = this->rows();
  ASSERT_GE(rows.size(), 48u);  // issue 27: at least 48 single-GPU configurations
  int stages[4] = {}, checkpointed = 0, offloaded = 0;
  for (const auto& r : rows) {
    ++stages[r.row.at("plan").at("stage").get<int>()];
    checkpointed += r.row.at("checkpointing").get<bool>();
    offloaded += offloads(r.row);
  }
  for (int s : stages) EXPECT_GE(s, 4);
  EXPECT_GE(checkpointed, 10);
  EXPECT_GE(offloaded, 10);
}

TEST_P(GpuSweepBars, AllocatorPeakWithinTheBar) {
  const auto rows = this->rows();
  double sum = 0, worst = 0, sum_gpu = 0, worst_gpu = 0;
  int gpu_rows = 0;
  std::string worst_name;
  for (const auto& r : rows) {
    const double e = std::fabs(r.error());
    const auto& m = r.row.at("measured");
    std::printf("| %s | %.2f | %.2f | %+.1f %% | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
                r.row.at("name").get<std::string>().c_str(), r.allocated / kGiB, r.prediction.total_bytes / kGiB,
                100 * r.error(), m.at("reserved_peak_bytes").get<double>() / kGiB, r.prediction.reserved_bytes / kGiB,
                r.device / kGiB, r.prediction.device_bytes / kGiB, r.peak.device_upper_bytes / kGiB);
    sum += e;
    if (e > worst) worst = e, worst_name = r.row.at("name");
    if (!offloads(r.row)) sum_gpu += e, worst_gpu = std::max(worst_gpu, e), ++gpu_rows;
  }
  const double mean = sum / static_cast<double>(rows.size());
  std::printf("all %zu rows: mean |error| %.2f %%, largest %.2f %% (%s); without offload (%d): mean %.2f %%, largest %.2f %%\n",
              rows.size(), 100 * mean, 100 * worst, worst_name.c_str(), gpu_rows, 100 * sum_gpu / gpu_rows,
              100 * worst_gpu);
  EXPECT_LE(mean, 0.03);                  // issue 27's bar: mean absolute error <= 3 %
  EXPECT_LE(worst, 0.06) << worst_name;   // and <= 6 % at most, offload plans included
  EXPECT_LE(worst_gpu, 0.05);             // the plans that keep their states on the GPU
  EXPECT_NEAR(mean, estimator::kSweepMeanAbsoluteError, 0.002);  // the band the estimator prints is this sweep's
}

TEST_P(GpuSweepBars, OffloadRowsStayWithinTheirStatedBand) {
  // Offload plans keep more of the engine's detail (side-stream copies, pinned staging) out of
  // the arithmetic; docs/estimator.md lists each row. None of the plans the estimator calls
  // calibrated may stray past the 6 % bar; one it does not call so must really be off (else the flag goes).
  for (const auto& r : rows()) {
    if (!offloads(r.row)) continue;
    EXPECT_NEAR(r.peak.allocated_bytes, r.prediction.total_bytes, 1.0) << r.row.at("name");  // estimate == train
    if (r.peak.calibrated)
      EXPECT_LE(std::fabs(r.error()), 0.06) << r.row.at("name");
    else
      EXPECT_GT(std::fabs(r.error()), 0.06) << r.row.at("name") << ": " << r.peak.calibration_note;
  }
}

TEST_P(GpuSweepBars, DeviceBoundIsSafe) {
  // "Fits" is judged on the device-level bound: it may never be more than 2 % under what the
  // device really used.
  for (const auto& r : rows()) {
    if (!r.peak.calibrated) continue;  // the estimator says so in its answer (OffloadRowsStayWithinTheirStatedBand)
    const auto& plan = r.row.at("plan");
    const bool offload = plan.at("offload_optimizer") != "none";
    const auto f = estimator::fragmentation_factors(r.row.at("checkpointing").get<bool>(), offload);
    const double context = estimator::kCudaContextBytes + (offload ? estimator::kOffloadContextBytes : 0);
    const double bound = r.prediction.total_bytes * f.upper + context;
    EXPECT_GE(bound, 0.98 * r.device) << r.row.at("name") << ": bound " << bound / 1073741824.0 << " GiB, device used "
                                      << r.device / 1073741824.0 << " GiB";
    EXPECT_NEAR(r.prediction.device_bytes, r.prediction.reserved_bytes + context, 1.0);
  }
}

TEST_P(GpuSweepBars, HostPeakWithinTheBar) {
  // Issue 27 item 6: the host's peak resident set (VmHWM) of each run beside the estimator's host
  // peak. Offload plans are judged like the GPU (mean <= 3 %, largest <= 6 %); without offload the
  // host holds only the process (and a Llama built in fp32 before it moves), so those rows are
  // judged in bytes.
  double sum = 0, worst = 0;
  int offload_rows = 0;
  std::string worst_name;
  for (const auto& r : rows()) {
    const double measured = r.row.at("measured").at("host_peak_rss_bytes").get<double>();
    const double predicted = r.prediction.host_peak_bytes;
    const double error = (predicted - measured) / measured;
    std::printf("| %s | host %.2f | predicted %.2f | %+.1f %% | pinned %.2f |\n", r.row.at("name").get<std::string>().c_str(),
                measured / kGiB, predicted / kGiB, 100 * error, r.prediction.host_pinned_bytes / kGiB);
    if (!offloads(r.row)) {
      EXPECT_NEAR(predicted, measured, 0.15 * kGiB) << r.row.at("name");
      continue;
    }
    ++offload_rows;
    sum += std::fabs(error);
    if (std::fabs(error) > worst) worst = std::fabs(error), worst_name = r.row.at("name");
  }
  ASSERT_GE(offload_rows, 10);
  const double mean = sum / offload_rows;
  std::printf("host peak, %d offload rows: mean |error| %.2f %%, largest %.2f %% (%s)\n", offload_rows, 100 * mean,
              100 * worst, worst_name.c_str());
  EXPECT_LE(mean, 0.03);
  EXPECT_LE(worst, 0.06) << worst_name;
  EXPECT_NEAR(mean, estimator::kHostSweepMeanAbsoluteError, 0.005);  // the band the estimator prints is this sweep's
}

TEST_P(GpuSweepBars, NvmeSwapFilesAsPredicted) {
  // The swap files' bytes sampled while each NVMe run ran, beside the estimator's NVMe bytes.
  int nvme_rows = 0;
  for (const auto& r : rows()) {
    const double measured = r.row.value("nvme_swap_bytes", 0.0);
    if (measured <= 0) {
      EXPECT_EQ(r.prediction.nvme_bytes, 0) << r.row.at("name");
      continue;
    }
    ++nvme_rows;
    EXPECT_NEAR(r.prediction.nvme_bytes, measured, 0.02 * measured) << r.row.at("name");
  }
  EXPECT_GE(nvme_rows, 3);
}

// The H100 sweep's 4.69B NVMe plan, whose token embedding (154.5M elements) is a sub-group above
// sub_group_size 1e8 and so sets the swap buffers' size (the H200 sweep has no such case).
const char* const kLargestNvmeCase = "gpt2-4.7b-s2048-b1-bf16-z3-optnvme-ckpt";

json h100_row(const std::string& name) {
  for (const auto& row : read_rows("gpu_sweep_h100.jsonl"))
    if (row.at("name") == name) return row;
  ADD_FAILURE() << name << " is not in gpu_sweep_h100.jsonl";
  return json::object();
}

TEST(GpuSweep, TheLargestNvmePlanHoldsOnHost) {
  for (const auto& r : predicted_rows("gpu_sweep_h100.jsonl")) {
    if (r.row.at("name") != kLargestNvmeCase) continue;
    EXPECT_LE(std::fabs(r.error()), 0.03);
    const double host = r.row.at("measured").at("host_peak_rss_bytes").get<double>();
    EXPECT_LE(std::fabs(r.prediction.host_peak_bytes - host) / host, 0.03);
    const double swap = r.row.value("nvme_swap_bytes", 0.0);
    EXPECT_NEAR(r.prediction.nvme_bytes, swap, 0.02 * swap);
    return;
  }
  FAIL() << kLargestNvmeCase << " did not run";
}

TEST(GpuSweep, NvmeSwapBuffersFollowTheLargestSubGroup) {
  // GPT-2 4.69B (the H100 row's shape), sub_group_size 1e8: the 50304 x 3072 token embedding is a
  // sub-group of its own, so each of the 4 swap buffers holds 154.5M fp32 elements (a 1 GiB pinned
  // block), not 1e8 (512 MiB) as min(sub_group_size, shard) would say.
  const auto row = h100_row(kLargestNvmeCase);
  ASSERT_FALSE(row.empty());
  const auto model = estimator::describe_transformer(spec_of(row).transformer.shape, "gpt2-4.7b");
  EXPECT_DOUBLE_EQ(estimator::largest_nvme_sub_group(model, 1, 1e8), 50304.0 * 3072);
  // On 4 ranks each chunk is a quarter: the embeddings' chunks and two blocks' fill the first.
  const double wte = 50304.0 * 3072, wpe = 2048.0 * 3072, block = 12.0 * 3072 * 3072 + 13.0 * 3072;
  EXPECT_DOUBLE_EQ(estimator::largest_nvme_sub_group(model, 4, 1e8), (wte + wpe + 2 * block) / 4);
  EXPECT_DOUBLE_EQ(estimator::largest_nvme_sub_group(model, 1, 1e9), wte + wpe + 7 * block);
}

TEST(GpuSweep, PinnedBuffersTakePowerOfTwoBlocks) {
  EXPECT_EQ(estimator::pinned_block_bytes(5.25e9), 8.0 * kGiB);
  EXPECT_EQ(estimator::pinned_block_bytes(4.0 * kGiB), 4.0 * kGiB);
  EXPECT_EQ(estimator::pinned_block_bytes(4.0 * kGiB + 1), 8.0 * kGiB);
  EXPECT_EQ(estimator::pinned_block_bytes(0), 0);
}

}  // namespace
}  // namespace shardscope::engine
