#include "estimator/host_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "estimator/byte_units.hpp"
#include "estimator/stage3_residency.hpp"

namespace shardscope::estimator {
namespace {

constexpr double kIoAlignment = 4096;  ///< aio's O_DIRECT alignment (aio/aligned_buffer.hpp)

double io_aligned(double bytes) { return std::ceil(bytes / kIoAlignment) * kIoAlignment; }

class BufferList {
 public:
  explicit BufferList(HostMemoryEstimate& e) : e_(e) {}
  HostMemoryEstimate& estimate() { return e_; }

  /// A tensor allocated as it is (torch::empty/zeros, pinned or not).
  void add(const std::string& name, double bytes, bool pinned) { push(name, bytes, pinned ? pinned_block_bytes(bytes) : bytes, pinned); }

  /// engine/placement/host_buffers.cpp's aligned_host_tensor: the length rounded up to 4 KiB and,
  /// pinned, one page more to find a 4 KiB boundary in the block.
  void add_io_aligned(const std::string& name, double bytes, bool pinned, double count = 1) {
    const double held = pinned ? pinned_block_bytes(io_aligned(bytes) + kIoAlignment) : io_aligned(bytes);
    push(count > 1 ? name + " x " + std::to_string(static_cast<long long>(count)) : name, bytes * count, held * count,
         pinned);
  }

 private:
  void push(const std::string& name, double bytes, double held, bool pinned) {
    if (bytes <= 0) return;
    e_.buffers.push_back({name, bytes, held, pinned});
    (pinned ? e_.pinned_bytes : e_.pageable_bytes) += held;
  }
  HostMemoryEstimate& e_;
};

struct RankShard {
  double numel = 0;          ///< elements of the flat parameters this rank owns
  double model_bytes = 2;    ///< bytes per element of the model's weights
  int ranks = 1;
};

// offload_optimizer "cpu": the shard's fp32 master (pinned), the moments (torch::full_like of the
// master, so pageable) and the 16-bit copy the CPU step writes, unless the parameter shard is on
// the host already (offload_param "cpu": the step writes into it).
void add_cpu_optimizer(BufferList& list, const RankShard& s, const ZeroPlan& plan, const EstimateOptions& o) {
  const bool pin = o.buckets.offload_optimizer_pin_memory;
  list.add("fp32 master (offload_optimizer)", 4 * s.numel, pin);
  for (int i = 0; i < o.precision.optimizer_states_per_param; ++i)
    list.add("fp32 optimizer state " + std::to_string(i + 1), 4 * s.numel, false);
  if (s.model_bytes < 4 && plan.offload_param != OffloadDevice::kCpu)
    list.add("16-bit weights for the device", s.model_bytes * s.numel, pin);
}

// offload_optimizer "nvme": a pool of buffer_count swap buffers, each the largest sub-group's fp32
// elements, and a 16-bit staging buffer of one sub-group (nvme_optimizer_store.cpp).
void add_nvme_optimizer(BufferList& list, const RankShard& s, const ModelDescription& model, const EstimateOptions& o) {
  const bool pin = o.buckets.offload_optimizer_pin_memory;
  const double largest = largest_nvme_sub_group(model, s.ranks, o.buckets.sub_group_size);
  // Each sub-group's master and moments in files of their own.
  list.estimate().nvme_bytes += 4.0 * (1 + o.precision.optimizer_states_per_param) * s.numel;
  list.add_io_aligned("optimizer swap buffer", 4 * largest, pin, o.buckets.offload_optimizer_buffer_count);
  if (s.model_bytes < 4) list.add_io_aligned("16-bit staging of a sub-group", s.model_bytes * largest, pin);
}

// offload_param "nvme": DeepSpeed's max_in_cpu elements stay in host memory, one buffer per
// gathered group; the rest swap through buffer_count buffers of buffer_size elements
// (nvme_param_shard.cpp's place_groups).
void add_nvme_params(BufferList& list, const RankShard& s, const ModelDescription& model, const EstimateOptions& o) {
  const bool pin = o.buckets.offload_param_pin_memory;
  std::vector<double> groups = stage3_group_sizes(model).value_or(std::vector<double>{model.total_params});
  double in_cpu = 0;
  bool swapped = false;
  for (double group : groups) {
    const double n = std::ceil(group / s.ranks);
    if (in_cpu + n > o.buckets.offload_param_max_in_cpu) {
      swapped = true;
      list.estimate().nvme_bytes += s.model_bytes * n;
      continue;
    }
    in_cpu += n;
    list.add_io_aligned("parameter group in host memory", s.model_bytes * n, pin);
  }
  if (swapped)
    list.add_io_aligned("parameter swap buffer", s.model_bytes * o.buckets.offload_param_buffer_size, pin,
                        o.buckets.offload_param_buffer_count);
}

// The engine builds GPT-2 on the GPU; its Llama (and any other layout) is built on the host in
// fp32 and then moved: whole, or one layer at a time when stage 3 on several ranks partitions it
// as it is built (zero.Init).
double host_build_bytes(const ModelDescription& model, const ZeroPlan& plan, int ranks) {
  if (model.shape && model.shape->layout == TransformerLayout::kGpt2) return 0;
  if (plan.stage == 3 && ranks > 1) return 4 * stage3_largest_group(model).value_or(model.total_params / ranks);
  return 4 * model.total_params;
}

std::string line(const HostBuffer& b, ByteUnit unit) {
  std::string text = b.name + ": " + format_bytes(b.bytes, unit);
  if (b.pinned) text += ", pinned in a " + format_bytes(b.held, unit) + " block";
  return text;
}

}  // namespace

double largest_nvme_sub_group(const ModelDescription& model, int ranks, double sub_group_size) {
  const double shard = std::ceil(model.total_params / std::max(1, ranks));
  const auto groups = stage3_group_sizes(model);
  if (!groups) return std::min(sub_group_size, shard);
  double largest = 0, current = 0;
  for (double group : *groups) {
    const double chunk = std::ceil(group / std::max(1, ranks));
    if (current > 0 && current + chunk > sub_group_size) current = 0;
    current += chunk;
    largest = std::max(largest, current);
  }
  return largest;
}

double pinned_block_bytes(double bytes) {
  if (bytes <= 0) return 0;
  return std::exp2(std::ceil(std::log2(bytes) - 1e-12));
}

HostMemoryEstimate estimate_host_memory(const ModelDescription& model, const ZeroPlan& plan,
                                        const EstimateOptions& options) {
  HostMemoryEstimate e;
  RankShard shard;
  shard.ranks = std::max(1, options.cluster.total_gpus());
  shard.numel = std::ceil(model.total_params / (plan.stage >= 1 ? shard.ranks : 1));
  shard.model_bytes = options.precision.precision == Precision::kFp32 ? 4 : 2;
  BufferList list(e);
  if (plan.offload_optimizer != OffloadDevice::kNone) {
    // The shard's gradients, summed on the host as each backward reduces them.
    list.add("fp32 gradients (offload_optimizer)", 4 * shard.numel, options.buckets.offload_optimizer_pin_memory);
    if (plan.offload_optimizer == OffloadDevice::kCpu) add_cpu_optimizer(list, shard, plan, options);
    else add_nvme_optimizer(list, shard, model, options);
  }
  if (plan.offload_param == OffloadDevice::kCpu)
    list.add("parameter shard (offload_param)", shard.model_bytes * shard.numel, options.buckets.offload_param_pin_memory);
  if (plan.offload_param == OffloadDevice::kNvme) add_nvme_params(list, shard, model, options);
  e.build_bytes = host_build_bytes(model, plan, shard.ranks);
  e.steady_bytes = e.process_bytes + e.pinned_bytes + e.pageable_bytes;
  e.peak_bytes = std::max(e.steady_bytes, kEarlyProcessHostBytes + e.build_bytes);
  const ByteUnit u = options.display_unit;
  for (const auto& b : e.buffers) e.formulas.push_back(line(b, u));
  e.formulas.push_back("the rank process: " + format_bytes(e.process_bytes, u) + " (measured)");
  if (e.build_bytes > 0)
    e.formulas.push_back("model built on the host in fp32 first: " + format_bytes(e.build_bytes, u) + " + " +
                         format_bytes(kEarlyProcessHostBytes, u) + " of process");
  return e;
}

}  // namespace shardscope::estimator
