#include "engine/allreduce_check.hpp"

#include <chrono>
#include <ostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/communicator.hpp"
#include "profiler/comm_bandwidth.hpp"

#ifdef SHARDSCOPE_TORCH_HAS_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace shardscope::engine {
namespace {

void synchronize(const torch::Device& device) {
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

}  // namespace

profiler::AllReduceResult run_allreduce_check(const AllReduceCheckOptions& o, std::ostream& out) {
  if (o.bytes < 4 || o.bytes > (std::int64_t{1} << 34)) throw std::invalid_argument("--bytes must be 4 B .. 16 GiB");
  if (o.iterations < 1) throw std::invalid_argument("--iters must be at least 1");
  CommunicatorOptions options = communicator_options_from_environment();
  options.device = resolve_rank_device(o.device, options.local_rank);
  auto comm = Communicator::connect(options);
  const auto elements = o.bytes / 4;
  const auto tensor_options = torch::TensorOptions().dtype(torch::kFloat32).device(options.device);
  // Rank r contributes r + 1: the sum is n(n+1)/2 everywhere, exact in fp32 for any sane n.
  torch::Tensor buffer = torch::full({elements}, static_cast<float>(comm->rank() + 1), tensor_options);
  for (int i = 0; i < o.warmup; ++i) comm->all_reduce(buffer).wait();
  buffer.fill_(static_cast<float>(comm->rank() + 1));
  synchronize(options.device);
  comm->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iterations; ++i) {
    if (i > 0) buffer.fill_(static_cast<float>(comm->rank() + 1));
    comm->all_reduce(buffer).wait();
  }
  synchronize(options.device);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.iterations;
  const int n = comm->world_size();
  const double expected = n * (n + 1) / 2.0;
  const bool mine = torch::all(buffer == static_cast<float>(expected)).item<bool>();
  const double all_correct = comm->all_reduce_scalar(mine ? 1.0 : 0.0, ReduceOp::kMin);
  const double slowest = comm->all_reduce_scalar(seconds, ReduceOp::kMax);
  profiler::AllReduceResult r;
  r.world_size = n;
  r.backend = comm->backend_name();
  r.bytes = elements * 4;
  r.iterations = o.iterations;
  r.mean_ms = slowest * 1e3;
  r.algbw_gbps = static_cast<double>(r.bytes) / slowest / 1e9;
  r.busbw_gbps = r.algbw_gbps * profiler::bus_bandwidth_factor(profiler::CollectiveOp::kAllReduce, n);
  r.correct = all_correct > 0.5;
  if (comm->rank() == 0) out << profiler::kAllReduceMarker << profiler::allreduce_to_json(r).dump() << std::endl;
  comm->shutdown();
  return r;
}

}  // namespace shardscope::engine
