#include "sessions/import/deepspeed_log_parser.hpp"

#include <ctime>
#include <utility>

#include "sessions/import/deepspeed_log_state.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace {

constexpr std::size_t kMaxLineBytes = 64u << 10;

// "[...] " at the start of `text`: the bracketed part, and `text` advanced past it.
std::optional<std::string_view> take_bracket(std::string_view& text) {
  if (text.empty() || text[0] != '[') return std::nullopt;
  const auto close = text.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  const auto inside = text.substr(1, close - 1);
  text.remove_prefix(close + 1);
  if (!text.empty() && text[0] == ' ') text.remove_prefix(1);
  return inside;
}

LogLevel level_of(std::string_view name, LogLevel fallback) {
  if (name == "DEBUG") return LogLevel::kDebug;
  if (name == "INFO") return LogLevel::kInfo;
  if (name == "WARNING") return LogLevel::kWarning;
  if (name == "ERROR" || name == "CRITICAL") return LogLevel::kError;
  return fallback;
}

// "[Rank 3] ..." (DeepSpeed's log_dist/print_dist) or "[rank3]:..." (torch's own prefix).
std::optional<int> take_rank(std::string_view& message) {
  if (starts_with(message, "[Rank ")) {
    const auto close = message.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const auto rank = parse_integer(message.substr(6, close - 6));
    if (!rank || *rank < -1 || *rank > 1 << 20) return std::nullopt;
    message.remove_prefix(close + 1);
    message = trim(message);
    return static_cast<int>(*rank);
  }
  if (starts_with(message, "[rank")) {
    const auto close = message.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    const auto rank = parse_integer(message.substr(5, close - 5));
    if (!rank || *rank < 0 || *rank > 1 << 20) return std::nullopt;
    message.remove_prefix(close + 2);
    return static_cast<int>(*rank);
  }
  return std::nullopt;
}

LogLineParts split_line(std::string_view line) {
  LogLineParts parts;
  parts.message = line;
  std::string_view rest = line;
  if (auto stamp = take_bracket(rest); stamp && (parts.time = parse_log_timestamp(*stamp))) {
    std::string_view after = rest;
    if (auto level = take_bracket(after)) {
      parts.level = level_of(*level, LogLevel::kInfo);
      std::string_view after_source = after;
      if (auto source = take_bracket(after_source)) {
        parts.source = *source;
        after = after_source;
      }
      rest = after;
    }
    parts.message = rest;
  } else if (starts_with(line, "ERROR:") || starts_with(line, "Traceback")) {
    parts.level = LogLevel::kError;
  }
  parts.rank = take_rank(parts.message);
  return parts;
}

const char* engine_timer_name(std::string_view deepspeed_name) {
  // DeepSpeed's global timers under the names ShardScope's engine records.
  if (deepspeed_name == "fwd") return "forward";
  if (deepspeed_name == "bwd") return "backward";
  if (deepspeed_name == "bwd_inner") return "backward_inner";
  if (deepspeed_name == "bwd_allreduce") return "backward_allreduce";
  if (deepspeed_name == "step") return "step";
  return nullptr;
}

// "time (ms) | fwd: 0.69 | bwd: 90.87 | ...": true when it was a timer line.
bool handle_timer_line(DeepSpeedLogParser::State& state, const LogLineParts& parts) {
  if (!starts_with(parts.message, "time (ms)")) return false;
  const int rank = state.rank_or_default(parts);
  OpenStep& open = state.step_of(rank);
  bool global = false;
  std::string_view rest = parts.message.substr(9);
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    std::string_view item = trim(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) continue;
    const auto name = trim(item.substr(0, colon));
    const auto ms = parse_real(trim(item.substr(colon + 1)));
    if (!ms || name.empty()) continue;
    const char* engine_name = engine_timer_name(name);
    global = global || engine_name;
    // Micro-step and optimizer timers print once per micro step: a step holds their sum.
    open.timers[engine_name ? engine_name : std::string(name)] += *ms;
  }
  if (global) state.close_step(rank);  // the global timers are the last line of a step
  return true;
}

// "step=12, skipped=0, lr=[0.001, 0.001], mom=[(0.9, 0.999)]" (engine._report_progress).
bool handle_progress_line(DeepSpeedLogParser::State& state, const LogLineParts& parts) {
  if (!starts_with(parts.message, "step=")) return false;
  const auto step = parse_integer(field_after(parts.message, "step").value_or(""));
  if (!step || *step < 1) return step.has_value();  // step=0: printed once at start-up
  const int rank = state.rank_or_default(parts);
  state.anchor_step(rank, *step);
  OpenStep& open = state.step_of(rank);
  open.has_metrics = true;  // the line itself says the step ran
  // _report_progress runs after the scheduler stepped: the lr it prints is the next step's.
  if (auto lr = field_after(parts.message, "lr"); lr && !lr->empty() && (*lr)[0] == '[') {
    if (auto value = parse_real(trim(lr->substr(1, lr->find(']') == std::string_view::npos ? std::string_view::npos
                                                                                            : lr->find(']') - 1)))) {
      StepMetrics next{};
      next.rank = rank;
      next.step = *step + 1;
      next.lr = *value;
      state.out.push_back(next);
    }
  }
  if (auto skipped = parse_integer(field_after(parts.message, "skipped").value_or(""))) {
    auto previous = state.last_skipped.find(rank);
    if (previous != state.last_skipped.end() && previous->second.first == *step - 1)
      open.metrics.skipped = open.metrics.skipped || *skipped > previous->second.second;
    state.last_skipped[rank] = {*step, *skipped};
  }
  return true;
}

// The loss scaler's overflow lines, both releases: "[deepspeed] OVERFLOW! Rank 0 Skipping step.
// Attempted loss scale: 65536, reducing to 32768" (dynamic, fp16; the hysteresis variant says
// "but hysteresis is H"), and 0.19.8's static scaler, "[deepspeed] OVERFLOW! Skipping step.
// Gradients are non-finite, weights were not updated." (runtime/fp16/loss_scaler.py). The open step
// was skipped, at the scale it attempted.
bool handle_overflow_line(DeepSpeedLogParser::State& state, const LogLineParts& parts) {
  const auto at = parts.message.find("OVERFLOW! ");
  if (at == std::string_view::npos || parts.message.find("Skipping step") == std::string_view::npos) return false;
  OpenStep& open = state.step_of(state.rank_or_default(parts));
  open.metrics.skipped = true;
  open.has_metrics = true;
  const auto attempted = parts.message.find("Attempted loss scale: ");
  if (attempted != std::string_view::npos) {
    const auto digits = parts.message.substr(attempted + 22);
    if (auto scale = parse_real(digits.substr(0, digits.find(',')))) open.metrics.loss_scale = *scale;
  }
  return true;
}

std::optional<std::int64_t> gigabytes(std::optional<std::string_view> text) {
  if (!text || text->size() < 3 || text->substr(text->size() - 2) != "GB") return std::nullopt;
  const auto value = parse_real(text->substr(0, text->size() - 2));
  const double bytes = value ? *value * 1073741824.0 : -1;  // timer.py divides by 1024**3
  if (!whole_bytes(bytes)) return std::nullopt;              // negative, NaN or beyond int64
  return static_cast<std::int64_t>(bytes);
}

// "epoch=0/micro_step=4/global_step=4, RunningAvgSamplesPerSec=.., CurrSamplesPerSec=.., MemAllocated=0.73GB, ..."
bool handle_throughput_line(DeepSpeedLogParser::State& state, const LogLineParts& parts) {
  if (!starts_with(parts.message, "epoch=") || parts.message.find("global_step=") == std::string_view::npos)
    return false;
  const auto step = parse_integer(field_after(parts.message, "global_step").value_or(""));
  if (!step || *step < 1) return true;
  const int rank = state.rank_or_default(parts);
  state.anchor_step(rank, *step);
  OpenStep& open = state.step_of(rank);
  if (auto rate = parse_real(field_after(parts.message, "CurrSamplesPerSec").value_or(""))) {
    open.metrics.samples_per_s = *rate;  // the whole job's rate (batch = train_batch_size), on rank 0
    open.has_metrics = true;
  }
  if (auto bytes = gigabytes(field_after(parts.message, "MemAllocated"))) open.metrics.mem_allocated_bytes = *bytes;
  if (auto bytes = gigabytes(field_after(parts.message, "MaxMemAllocated"))) open.metrics.mem_peak_bytes = *bytes;
  open.has_metrics = open.has_metrics || open.metrics.mem_allocated_bytes || open.metrics.mem_peak_bytes;
  return true;
}

// "comm op: all_reduce | time (ms): 1.23 | msg size: 2.25 KB | algbw (Gbps): 0.01 | busbw (Gbps): 0.01"
bool handle_comm_op_line(DeepSpeedLogParser::State& state, const LogLineParts& parts) {
  if (!starts_with(parts.message, "comm op:")) return false;
  CommRecord record;
  std::string_view rest = parts.message;
  std::optional<double> ms, size, algbw, busbw;
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    const std::string_view item = trim(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = trim(item.substr(0, colon));
    const auto value = trim(item.substr(colon + 1));
    if (key == "comm op") record.op = std::string(value);
    else if (key == "time (ms)") ms = parse_real(value);
    else if (key == "msg size") size = parse_binary_size(value);
    else if (key == "algbw (Gbps)") algbw = parse_real(value);
    else if (key == "busbw (Gbps)") busbw = parse_real(value);
  }
  const auto bytes = size ? whole_bytes(*size) : std::nullopt;
  if (record.op.empty() || !ms || !bytes) return true;
  const int rank = state.rank_or_default(parts);
  record.rank = rank;
  record.step = state.step_of(rank).metrics.step;
  record.bytes = *bytes;
  record.latency_us = *ms * 1e3;
  record.algbw_gbps = algbw.value_or(0) / 8;  // DeepSpeed prints Gbit/s; sessions keep GB/s
  record.busbw_gbps = busbw.value_or(0) / 8;
  record.group_size = state.facts.world_size.value_or(0);
  state.out.push_back(record);
  return true;
}

}  // namespace

std::optional<double> parse_log_timestamp(std::string_view text) {
  // "2026-12-01 08:53:47,703"
  if (text.size() != 23 || text[4] != '-' || text[7] != '-' || text[10] != ' ' || text[13] != ':' ||
      text[16] != ':' || text[19] != ',')
    return std::nullopt;
  auto number = [&](std::size_t at, std::size_t n) { return parse_integer(text.substr(at, n)); };
  const auto year = number(0, 4), month = number(5, 2), day = number(8, 2), hour = number(11, 2),
             minute = number(14, 2), second = number(17, 2), millis = number(20, 3);
  if (!year || !month || !day || !hour || !minute || !second || !millis || *month < 1 || *month > 12 || *day < 1 ||
      *day > 31 || *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year - 1900);
  tm.tm_mon = static_cast<int>(*month - 1);
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*hour);
  tm.tm_min = static_cast<int>(*minute);
  tm.tm_sec = static_cast<int>(*second);
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(t) + static_cast<double>(*millis) / 1000.0;
}

OpenStep& DeepSpeedLogParser::State::step_of(int rank) {
  OpenStep& open = this->open[rank];
  if (!open.has_step) {
    auto next = next_step.find(rank);
    open.metrics.rank = rank;
    open.metrics.step = next == next_step.end() ? 1 : next->second;
    open.has_step = true;
  }
  return open;
}

void DeepSpeedLogParser::State::anchor_step(int rank, std::int64_t step) {
  OpenStep& current = step_of(rank);
  if (current.metrics.step != step && current.anchored) close_step(rank);
  OpenStep& open = step_of(rank);
  open.metrics.step = step;  // lines seen so far without a number belong to the step this one names
  open.anchored = true;
}

void DeepSpeedLogParser::State::close_step(int rank) {
  auto it = open.find(rank);
  if (it == open.end()) return;
  OpenStep& s = it->second;
  if (!s.timers.empty()) {
    TimerBreakdown timers{rank, s.metrics.step, {}};
    for (const auto& [name, ms] : s.timers) timers.timers.push_back({name, ms});
    out.push_back(std::move(timers));
    const auto f = s.timers.find("forward"), b = s.timers.find("backward"), st = s.timers.find("step");
    if (f != s.timers.end() && b != s.timers.end() && st != s.timers.end()) {
      s.metrics.step_time_ms = f->second + b->second + st->second;  // DeepSpeed's "iter latency"
      s.has_metrics = true;
    }
  }
  if (s.has_metrics) {
    s.metrics.wall_time = facts.last_time.value_or(0);
    out.push_back(s.metrics);
  }
  next_step[rank] = s.metrics.step + 1;
  open.erase(it);
}

DeepSpeedLogParser::DeepSpeedLogParser(std::string file, int default_rank) : state_(std::make_unique<State>()) {
  state_->file = std::move(file);
  state_->default_rank = default_rank;
}
DeepSpeedLogParser::~DeepSpeedLogParser() = default;
DeepSpeedLogParser::DeepSpeedLogParser(DeepSpeedLogParser&&) noexcept = default;
DeepSpeedLogParser& DeepSpeedLogParser::operator=(DeepSpeedLogParser&&) noexcept = default;

void DeepSpeedLogParser::feed_line(std::string_view line) {
  State& s = *state_;
  ++s.line_number;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
  const LogLineParts parts = split_line(line);
  if (parts.time) {
    if (!s.facts.first_time) s.facts.first_time = parts.time;
    s.facts.last_time = parts.time;
  }
  const int log_rank = parts.rank.value_or(s.default_rank);
  s.out.push_back(LogLine{log_rank, parts.time.value_or(s.facts.last_time.value_or(0)), parts.level, std::string(line)});
  if (handle_block_line(s, parts, line)) return;
  if (handle_timer_line(s, parts) || handle_progress_line(s, parts) || handle_throughput_line(s, parts) ||
      handle_comm_op_line(s, parts) || handle_overflow_line(s, parts))
    return;
  handle_run_fact_line(s, parts);
}

void DeepSpeedLogParser::feed_text(std::string_view text) {
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    feed_line(text.substr(start, end - start));
    start = end + 1;
  }
}

void DeepSpeedLogParser::finish() {
  finish_block(*state_);
  std::vector<int> ranks;
  for (const auto& [rank, open] : state_->open) ranks.push_back(rank);
  for (int rank : ranks) state_->close_step(rank);
}

std::vector<Event> DeepSpeedLogParser::take_events() { return std::exchange(state_->out, {}); }
const DeepSpeedLogFacts& DeepSpeedLogParser::facts() const { return state_->facts; }
std::size_t DeepSpeedLogParser::lines() const { return state_->line_number; }

}  // namespace shardscope::sessions
