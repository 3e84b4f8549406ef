#pragma once
// Runs N data-parallel ranks as threads of the test process, each with its own Gloo communicator
// over one shared c10d HashStore (the way c10d's own C++ tests run a group), so a test can look
// at every rank's tensors. Exceptions on any rank fail the test with the rank named.

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "engine/communicator.hpp"

namespace shardscope::testing {

/// Calls fn(rank, communicator) on `world` threads and joins them; rethrows the first failure.
/// With `cuda`, rank r uses GPU r over NCCL; otherwise the CPU over Gloo.
inline void run_ranks(int world, const std::function<void(int, std::shared_ptr<engine::Communicator>)>& fn,
                      bool cuda = false, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::string failure;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        engine::CommunicatorOptions o;
        o.rank = r;
        o.world_size = world;
        o.timeout = timeout;
        if (cuda) o.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(r));
        auto comm = std::make_shared<engine::Communicator>(store, o);
        fn(r, comm);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure.empty()) failure = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
}

}  // namespace shardscope::testing
