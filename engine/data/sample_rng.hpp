#pragma once
// A small counter-based random source for the data loaders: SplitMix64 (Steele, Lea and Flood,
// 2014). Every sample is generated from (seed, sample index) alone, so a sample is the same on
// every rank, on every run and after a resume, whatever order it is visited in; torch's
// generators would tie it to the order of calls instead.

#include <cmath>
#include <cstdint>

namespace shardscope::engine {

/// SplitMix64's finaliser: a bijective mix of 64 bits.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class SampleRng {
 public:
  /// A stream for one (seed, stream) pair, e.g. (dataset seed, sample index).
  SampleRng(std::uint64_t seed, std::uint64_t stream) : state_(mix64(seed ^ mix64(stream + 0x9e3779b97f4a7c15ULL))) {}

  /// The next 64 random bits.
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller; one value per call keeps the stream position simple).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
};

}  // namespace shardscope::engine
