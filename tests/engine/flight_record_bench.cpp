// What the collective flight record costs the issuing thread (issue 28 item 1): the enter and
// leave of one collective, timed over a million collectives with the tags the engine gives
// (a layer's gather), and what the reporter thread pays to take the marks. Printed in ns per
// collective, the median of 7 repeats; scripts/bench_flight_record.py sets it beside whole runs.
// Usage: build/tests/engine/flight_record_bench [COLLECTIVES]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/collective_flight_record.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using shardscope::engine::CollectiveFlightRecord;
using shardscope::engine::CollectivePhase;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per collective for enter + leave, and ns per mark taken, on one ring.
std::pair<double, double> one_repeat(long collectives) {
  CollectiveFlightRecord record;
  const std::string tags[] = {"gather transformer.h.12", "grad bucket 3", "reduce_scatter transformer.h.7"};
  double issuing = 0, taking = 0;
  long marks = 0;
  for (long done = 0; done < collectives;) {
    const long batch = std::min<long>(512, collectives - done);  // the reporter takes about once a second
    const auto start = Clock::now();
    for (long i = 0; i < batch; ++i) {
      const std::int64_t sequence = done + i + 1;
      record.enter(sequence, "all_gather", 1 << 20, "BFloat16", tags[sequence % 3], sequence / 64, CollectivePhase::kForward);
      record.leave(sequence);
    }
    const auto issued = Clock::now();
    marks += static_cast<long>(record.take_marks(0).size());
    issuing += std::chrono::duration<double, std::nano>(issued - start).count();
    taking += std::chrono::duration<double, std::nano>(Clock::now() - issued).count();
    done += batch;
  }
  return {issuing / static_cast<double>(collectives), taking / static_cast<double>(std::max(1L, marks))};
}

}  // namespace

int main(int argc, char** argv) {
  const long collectives = argc > 1 ? std::atol(argv[1]) : 1000000;
  std::vector<double> issuing, taking;
  for (int repeat = 0; repeat < 7; ++repeat) {
    const auto [i, t] = one_repeat(collectives);
    issuing.push_back(i);
    taking.push_back(t);
  }
  std::printf("flight record: enter + leave %.0f ns per collective (issuing thread), take_marks %.0f ns per mark "
              "(reporter thread); median of 7 repeats of %ld collectives\n",
              median(issuing), median(taking), collectives);
  return 0;
}
