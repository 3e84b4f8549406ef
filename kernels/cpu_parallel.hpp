#pragma once
// How the CPU kernels split a flat buffer over OpenMP threads: fixed chunks of kCpuChunkElements
// (a multiple of every vector width, so only the last chunk has a scalar tail). The chunking does
// not depend on the thread count, which is what makes the reductions deterministic.

#include <cstddef>

namespace shardscope::kernels {

/// 64 KiB of fp32 per chunk: big enough to amortise scheduling, small enough to balance threads.
inline constexpr std::size_t kCpuChunkElements = 16384;

/// Number of chunks `count` elements split into.
inline std::size_t cpu_chunk_count(std::size_t count) {
  return (count + kCpuChunkElements - 1) / kCpuChunkElements;
}


/// Runs fn(begin, end) over every chunk of [0, count), in parallel when there is more than one.
template <typename Fn>
void for_each_chunk(std::size_t count, Fn&& fn) {
  const long long chunks = static_cast<long long>(cpu_chunk_count(count));
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (long long c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kCpuChunkElements;
    const std::size_t end = begin + kCpuChunkElements < count ? begin + kCpuChunkElements : count;
    fn(begin, end);
  }
}

}  // namespace shardscope::kernels
