// The two sources of `shardscope-load`'s events (load_script.hpp): a synthetic run made on the
// fly and a recorded session replayed as many ranks.
#include "sessions/load_script.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <type_traits>
#include <variant>

#include "sessions/doctor_records.hpp"
#include "sessions/errors.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::sessions {
namespace {


// The ranks of a simulated world, eight to a node as on an 8-GPU machine.
std::vector<RankInfo> simulated_ranks(int world_size) {
  std::vector<RankInfo> ranks;
  ranks.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r)
    ranks.push_back({r, r % 8, "load-node" + std::to_string(r / 8), 100000 + r, "cuda:" + std::to_string(r % 8)});
  return ranks;
}

// The rank an event is sent as: every per-rank event is rewritten to the replaying rank.
void set_rank(Event& event, int rank) {
  std::visit(
      [rank](auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (!std::is_same_v<T, RunStart> && !std::is_same_v<T, RunEnd> &&
                      !std::is_same_v<T, SessionOrigin> && !std::is_same_v<T, HostReport> &&
                      !std::is_same_v<T, Finding>)
          e.rank = rank;
      },
      event);
}

constexpr const char* kTimers[] = {"forward", "backward", "backward_inner", "backward_allreduce", "step"};
constexpr const char* kCollectives[] = {"reduce_scatter", "all_gather", "all_reduce"};
constexpr const char* kPhases[] = {"backward", "optimizer", "backward"};

class SyntheticScript final : public LoadScript {
 public:
  explicit SyntheticScript(const SyntheticRunOptions& o) : o_(o), started_at_(unix_now()) {}

  void step_events(int rank, int world_size, std::int64_t index, std::vector<Event>& out) const override {
    const std::int64_t step = index + 1;  // the engine counts optimizer steps from 1
    const double end = started_at_ + static_cast<double>(step) * o_.step_ms / 1000.0;
    add_marks(rank, world_size, index, end, out);
    if (o_.log_every > 0 && step % o_.log_every == 0)
      out.push_back(LogLine{rank, end, LogLevel::kInfo,
                            "step " + std::to_string(step) + " loss " + std::to_string(loss(step)) + " lr 3e-4"});
    out.push_back(step_metrics(rank, step, end));
    TimerBreakdown timers{rank, step, {}};
    for (const char* t : kTimers) timers.timers.push_back({t, 10.0 + rank % 3 + static_cast<double>(step % 5)});
    out.push_back(std::move(timers));
    for (const char* op : kCollectives)
      out.push_back(CommRecord{rank, step, op, 256 << 20, 5000 + static_cast<double>(rank % 7), 53.7, 94.0, world_size});
    if (index == o_.window_step && rank < o_.profiled_ranks) add_window(rank, step, out);
  }

  double recorded_step_ms(int, std::int64_t) const override { return o_.step_ms; }

  RunStart run_start(int world_size) const override {
    RunStart start;
    start.name = "shardscope-load";
    start.started_at = started_at_;
    start.command_line = {"shardscope-load", "--ranks", std::to_string(world_size)};
    start.config_json = R"({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})";
    start.world_size = world_size;
    start.ranks = simulated_ranks(world_size);
    start.tags = {"load"};
    return start;
  }

  std::string describe() const override {
    return "synthetic run: per step 6 collective marks, 5 timers, 3 collective records, 1 step" +
           std::string(o_.log_every > 0 ? ", a log line every " + std::to_string(o_.log_every) + " steps" : "") +
           (o_.window_step >= 0 && o_.kernels > 0
                ? "; profiled window at step " + std::to_string(o_.window_step + 1) + ": " +
                      std::to_string(o_.kernels) + " activity records and " + std::to_string(o_.kernels / 50) +
                      " NVTX ranges on " + std::to_string(o_.profiled_ranks) + " rank(s)"
                : "");
  }

 private:
  static double loss(std::int64_t step) { return 8.0 / (1.0 + static_cast<double>(step) * 0.01); }

  StepMetrics step_metrics(int rank, std::int64_t step, double end) const {
    StepMetrics m;
    m.rank = rank;
    m.step = step;
    m.wall_time = end;
    m.step_time_ms = o_.step_ms + static_cast<double>((step + rank) % 7);
    m.loss = loss(step);
    m.lr = 3e-4;
    m.grad_norm = 1.1;
    m.samples_per_s = 16;
    m.tokens_per_s = 16 * 2048;
    m.tflops = 310;
    m.mem_allocated_bytes = 40ll << 30;
    m.mem_reserved_bytes = 48ll << 30;
    m.mem_peak_bytes = 44ll << 30;
    return m;
  }

  // The flight record's enter and leave marks of the step's three collectives.
  void add_marks(int rank, int world_size, std::int64_t index, double end, std::vector<Event>& out) const {
    const double step_s = o_.step_ms / 1000.0;
    for (int k = 0; k < 3; ++k) {
      CollectiveMark m;
      m.rank = rank;
      m.sequence = index * 3 + k + 1;
      m.op = kCollectives[k];
      m.bytes = 256 << 20;
      m.dtype = "bfloat16";
      m.step = index + 1;
      m.phase = kPhases[k];
      m.tag = k == 0 ? "grad bucket 0" : k == 1 ? "updated partition" : "loss";
      m.entered_at = end - step_s + step_s * (0.5 + 0.15 * k);
      out.push_back(m);
      m.left_at = m.entered_at + 0.005 + 1e-5 * (rank % 7) + 1e-6 * (world_size % 3);
      out.push_back(std::move(m));
    }
  }

  void add_window(int rank, std::int64_t step, std::vector<Event>& out) const {
    for (int first = 0; first < o_.kernels; first += 1000) {
      ActivityBatch batch{rank, {}};
      for (int k = first; k < std::min(o_.kernels, first + 1000); ++k) {
        const bool memcpy = k % 10 == 0;
        batch.records.push_back({memcpy ? ActivityKind::kMemcpy : ActivityKind::kKernel,
                                 memcpy ? "HtoD" : "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn_" + std::to_string(k % 40),
                                 k * 2000LL, k * 2000LL + 1500, rank % 8, 7 + k % 3, memcpy ? 1 << 20 : 0, step});
      }
      out.push_back(std::move(batch));
    }
    NvtxBatch nvtx{rank, {}};
    for (int k = 0; k < o_.kernels / 50; ++k)
      nvtx.ranges.push_back({"layer_" + std::to_string(k % 48), "shardscope", k * 100000LL, k * 100000LL + 90000, -1, 1, step});
    if (!nvtx.ranges.empty()) out.push_back(std::move(nvtx));
  }

  SyntheticRunOptions o_;
  double started_at_;
};

// One recorded step of one rank: what it sent, and when.
struct RecordedStep {
  std::int64_t step = 0;
  double wall_time = 0;
  double step_ms = 0;
  std::vector<Event> events;
};

// How far one lap of the recording moves steps, times and sequence numbers on.
struct LapShift {
  std::int64_t steps = 0;
  double seconds = 0;
  std::int64_t sequences = 0;
};

// Moves a recorded event `lap` laps on: a replay past the recording's end keeps its steps, times
// and collective sequence numbers increasing, as a longer run would.
void shift_event(Event& event, const LapShift& shift, std::int64_t lap) {
  if (lap == 0) return;
  const std::int64_t ds = shift.steps * lap;
  const double dt = shift.seconds * static_cast<double>(lap);
  const auto dns = static_cast<std::int64_t>(dt * 1e9);
  std::visit(
      [&](auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, StepMetrics>) {
          e.step += ds;
          e.wall_time += dt;
        } else if constexpr (std::is_same_v<T, TimerBreakdown> || std::is_same_v<T, CommRecord>) {
          e.step += ds;
        } else if constexpr (std::is_same_v<T, CollectiveMark>) {
          e.step += ds;
          e.sequence += shift.sequences * lap;
          e.entered_at += dt;
          if (e.left_at) *e.left_at += dt;
        } else if constexpr (std::is_same_v<T, LogLine>) {
          e.time += dt;
        } else if constexpr (std::is_same_v<T, ActivityBatch>) {
          for (auto& a : e.records) {
            if (a.step >= 0) a.step += ds;
            a.start_ns += dns;
            a.end_ns += dns;
          }
        } else if constexpr (std::is_same_v<T, NvtxBatch>) {
          for (auto& n : e.ranges) {
            if (n.step >= 0) n.step += ds;
            n.start_ns += dns;
            n.end_ns += dns;
          }
        }
      },
      event);
}

class RecordedScript final : public LoadScript {
 public:
  RecordedScript(std::vector<std::vector<RecordedStep>> ranks, LapShift shift, SessionDetail detail)
      : ranks_(std::move(ranks)), shift_(shift), detail_(std::move(detail)) {}

  void step_events(int rank, int, std::int64_t index, std::vector<Event>& out) const override {
    const auto& steps = ranks_[static_cast<std::size_t>(rank) % ranks_.size()];
    const auto count = static_cast<std::int64_t>(steps.size());
    const std::int64_t lap = index / count;
    for (Event event : steps[static_cast<std::size_t>(index % count)].events) {
      set_rank(event, rank);
      shift_event(event, shift_, lap);
      out.push_back(std::move(event));
    }
  }

  double recorded_step_ms(int rank, std::int64_t index) const override {
    const auto& steps = ranks_[static_cast<std::size_t>(rank) % ranks_.size()];
    return steps[static_cast<std::size_t>(index % static_cast<std::int64_t>(steps.size()))].step_ms;
  }

  RunStart run_start(int world_size) const override {
    RunStart start;
    start.name = detail_.info.name + " (replayed by shardscope-load)";
    start.started_at = unix_now();
    start.command_line = detail_.command_line;
    start.config_json = detail_.config_json;
    if (detail_.environment) start.environment = *detail_.environment;
    start.world_size = world_size;
    start.ranks = simulated_ranks(world_size);
    start.tags = {"load", "replay"};
    return start;
  }

  std::string describe() const override {
    std::size_t steps = 0, events = 0;
    for (const auto& r : ranks_)
      for (const auto& s : r) {
        ++steps;
        events += s.events.size();
      }
    return "session " + std::to_string(detail_.info.id) + " '" + detail_.info.name + "': " +
           std::to_string(ranks_.size()) + " recorded rank(s), " + std::to_string(steps) + " rank-steps, " +
           std::to_string(events) + " events";
  }

 private:
  std::vector<std::vector<RecordedStep>> ranks_;
  LapShift shift_;
  SessionDetail detail_;
};

// The recorded step an event of `step` belongs to (the nearest one at or after it, else the last).
std::size_t step_slot(const std::vector<RecordedStep>& steps, std::int64_t step) {
  const auto it = std::lower_bound(steps.begin(), steps.end(), step,
                                   [](const RecordedStep& s, std::int64_t v) { return s.step < v; });
  return it == steps.end() ? steps.size() - 1 : static_cast<std::size_t>(it - steps.begin());
}

// The step a log line of `time` belongs to: the first that ended at or after it.
std::size_t time_slot(const std::vector<RecordedStep>& steps, double time) {
  const auto it = std::lower_bound(steps.begin(), steps.end(), time,
                                   [](const RecordedStep& s, double v) { return s.wall_time < v; });
  return it == steps.end() ? steps.size() - 1 : static_cast<std::size_t>(it - steps.begin());
}

// Batches of at most 1,000 records, as the profiler flushes its CUPTI buffers.
template <typename Batch, typename Record>
void add_batches(std::vector<RecordedStep>& steps, int rank, std::vector<Record> records,
                 std::vector<Record> Batch::*field) {
  std::map<std::size_t, Batch> open;
  for (auto& r : records) {
    const std::size_t slot = r.step >= 0 ? step_slot(steps, r.step) : 0;  // an unknown step: the first
    Batch& batch = open.try_emplace(slot, Batch{rank, {}}).first->second;
    (batch.*field).push_back(std::move(r));
    if ((batch.*field).size() == 1000) {
      steps[slot].events.push_back(std::move(batch));
      open.erase(slot);
    }
  }
  for (auto& [slot, batch] : open) steps[slot].events.push_back(std::move(batch));
}

std::vector<RecordedStep> read_rank_steps(Store& store, std::int64_t id, int rank, std::int64_t& max_sequence) {
  std::vector<RecordedStep> steps;
  for (auto& m : load_steps(store, id, rank)) {
    RecordedStep s{m.step, m.wall_time, m.step_time_ms.value_or(0), {}};
    s.events.push_back(std::move(m));
    steps.push_back(std::move(s));
  }
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  if (steps.empty()) return steps;
  for (auto& t : load_timer_breakdowns(store, id, rank)) steps[step_slot(steps, t.step)].events.push_back(std::move(t));
  for (auto& c : load_comm_records(store, id, rank)) steps[step_slot(steps, c.step)].events.push_back(std::move(c));
  for (auto& m : load_collective_marks(store, id)) {
    if (m.rank != rank) continue;
    max_sequence = std::max(max_sequence, m.sequence);
    auto& events = steps[step_slot(steps, m.step)].events;
    CollectiveMark entered = m;
    entered.left_at.reset();
    events.insert(events.begin(), std::move(entered));  // a collective is entered before the step ends
    if (m.left_at) events.insert(events.begin() + 1, std::move(m));
  }
  for (auto& line : load_logs(store, id, rank)) steps[time_slot(steps, line.time)].events.push_back(std::move(line));
  add_batches(steps, rank, load_activity_details(store, id, rank), &ActivityBatch::records);
  add_batches(steps, rank, load_nvtx(store, id, rank), &NvtxBatch::ranges);
  return steps;
}

}  // namespace

std::unique_ptr<LoadScript> make_synthetic_script(const SyntheticRunOptions& options) {
  return std::make_unique<SyntheticScript>(options);
}

std::unique_ptr<LoadScript> read_recorded_script(Store& store, std::int64_t session_id,
                                                 const RecordedRunOptions& options) {
  SessionDetail detail = load_session(store, session_id);
  std::vector<int> ranks = load_step_ranks(store, session_id);
  if (ranks.empty())
    throw SessionsError(ErrorKind::kInvalidArgument,
                        "session " + std::to_string(session_id) + " ('" + detail.info.name +
                            "') has no step rows to replay; pick a session with steps (shardscope sessions list)");
  if (options.source_ranks > 0 && ranks.size() > static_cast<std::size_t>(options.source_ranks))
    ranks.resize(static_cast<std::size_t>(options.source_ranks));
  std::vector<std::vector<RecordedStep>> steps;
  std::int64_t max_sequence = 0;
  LapShift shift;
  for (int rank : ranks) {
    steps.push_back(read_rank_steps(store, session_id, rank, max_sequence));
    const auto& s = steps.back();
    shift.steps = std::max(shift.steps, s.back().step - s.front().step + 1);
    const double mean_s = s.size() > 1 ? (s.back().wall_time - s.front().wall_time) / static_cast<double>(s.size() - 1) : 0;
    shift.seconds = std::max(shift.seconds, s.back().wall_time - s.front().wall_time + mean_s);
  }
  shift.sequences = max_sequence;
  return std::make_unique<RecordedScript>(std::move(steps), shift, std::move(detail));
}

}  // namespace shardscope::sessions
