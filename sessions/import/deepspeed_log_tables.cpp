// The multi-line blocks of DeepSpeed's output: the flops profiler's "Profile Summary at step N"
// (each figure a SeriesPoint, FLOPS per GPU also the step's tflops), comms_logger's log_summary
// table (one CommSummary per op and message size) and the user config of the config dump.
#include <cctype>

#include <nlohmann/json.hpp>

#include "sessions/import/deepspeed_log_state.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace {

constexpr std::size_t kMaxConfigLines = 20000;

// "fwd FLOPS per GPU = fwd flops per GPU / fwd latency" -> "fwd_flop_per_s_per_gpu"; FLOPS (a
// rate) and flops (a count) stay apart.
std::string figure_name(std::string_view key) {
  if (const auto eq = key.find(" = "); eq != std::string_view::npos) key = key.substr(0, eq);
  std::string text(trim(key)), out;
  for (std::size_t at; (at = text.find("FLOPS")) != std::string::npos;) text.replace(at, 5, "flop per s");
  for (char c : text) {
    const bool word = std::isalnum(static_cast<unsigned char>(c));
    if (word) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

void handle_flops_figure(DeepSpeedLogParser::State& s, std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return;
  std::string name = figure_name(line.substr(0, colon));
  const std::string_view text = trim(line.substr(colon + 1));
  std::optional<double> value;
  for (const char* unit : {"FLOPS", "MACs", "s", ""}) {
    const std::string_view u = unit;
    if (text.size() >= u.size() && text.substr(text.size() - u.size()) == u) {
      value = parse_prefixed_number(text, u);
      if (value && u == "s") {
        *value *= 1e3;  // latencies in ms, as the session's timers
        name += "_ms";
      }
      break;
    }
  }
  if (!value || name.empty()) return;
  s.out.push_back(SeriesPoint{s.block_rank, s.flops_step, "flops_profiler/" + name, *value});
  if (name == "flop_per_s_per_gpu") {
    OpenStep& open = s.open[s.block_rank];
    if (open.has_step && open.metrics.step == s.flops_step) {
      open.metrics.tflops = *value / 1e12;
      open.has_metrics = true;
    }
  }
}

// A log_summary row: "<20 spaces><size> <count> <total ms> <avg ms> <tput Gbps> <busbw Gbps>".
bool handle_comms_row(DeepSpeedLogParser::State& s, std::string_view line) {
  std::vector<std::string_view> tokens;
  std::string_view rest = trim(line);
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    tokens.push_back(rest.substr(0, space));
    rest = space == std::string_view::npos ? std::string_view() : trim(rest.substr(space));
  }
  if (tokens.size() < 6 || s.comm_op.empty()) return false;
  const std::size_t n = tokens.size();
  const auto count = parse_integer(tokens[n - 5]);
  const auto total = parse_real(tokens[n - 4]), avg = parse_real(tokens[n - 3]), tput = parse_real(tokens[n - 2]),
             busbw = parse_real(tokens[n - 1]);
  std::string size_text;
  for (std::size_t i = 0; i + 5 < n; ++i) size_text += (i ? " " : "") + std::string(tokens[i]);
  const auto size = parse_binary_size(size_text);
  if (!count || !total || !avg || !tput || !busbw || !size) return false;
  // "4.0YB" parses to 4.8e24 bytes: beyond int64, so no row is recorded; the line still has a
  // row's shape, so the table goes on with the next one.
  const auto bytes = whole_bytes(*size);
  if (!bytes) return true;
  s.out.push_back(CommSummary{s.block_rank, s.comm_op, *bytes, *count, *total, *avg,
                              *tput, *busbw});
  return true;
}

bool handle_comms_table_line(DeepSpeedLogParser::State& s, std::string_view raw) {
  if (raw.empty()) return false;
  if (raw[0] == ' ') return handle_comms_row(s, raw);
  const auto name = trim(raw);
  // An op name alone on its line ("all_reduce", "log_summary_barrier").
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  s.comm_op = std::string(name);
  return !name.empty();
}

// DeepSpeed prints the config with json.dumps, which writes Python's float('inf') and nan bare
// ("steps_per_print": inf: the Hugging Face Trainer sets it so): JSON has neither, so infinity
// becomes the largest double and nan null; text inside strings is left alone.
std::string json_of_python_dump(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const bool word_start = i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]));
    auto bare = [&](const char* word) {
      const std::size_t n = std::char_traits<char>::length(word);
      return word_start && text.compare(i, n, word) == 0 &&
             (i + n == text.size() || !std::isalnum(static_cast<unsigned char>(text[i + n])));
    };
    if (bare("Infinity") || bare("inf")) {
      out += "1.7976931348623157e308";
      i += bare("inf") ? 2 : 7;
    } else if (bare("NaN") || bare("nan")) {
      if (!out.empty() && out.back() == '-') out.pop_back();
      out += "null";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

void finish_user_config(DeepSpeedLogParser::State& s) {
  const auto parsed = nlohmann::json::parse(json_of_python_dump(s.config_text), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded() && parsed.is_object()) s.facts.user_config_json = parsed.dump();
  s.config_text.clear();
}

bool start_block(DeepSpeedLogParser::State& s, const LogLineParts& parts) {
  const std::string_view m = parts.message;
  if (starts_with(m, "Profile Summary at step ")) {
    const auto step = parse_integer(trim(m.substr(24, m.find(':') == std::string_view::npos ? std::string_view::npos
                                                                                              : m.find(':') - 24)));
    if (!step) return false;
    s.block = LogBlock::kFlopsSummary;
    s.flops_step = *step;
    s.block_rank = s.rank_or_default(parts);
    s.anchor_step(s.block_rank, *step);
    return true;
  }
  if (starts_with(m, "Comm. Op") && m.find("Message Size") != std::string_view::npos) {
    s.block = LogBlock::kCommsTable;
    s.block_rank = s.rank_or_default(parts);
    s.comm_op.clear();
    return true;
  }
  if (parts.source.find("print_user_config") != std::string_view::npos && starts_with(trim(m), "json = {")) {
    s.block = LogBlock::kUserConfig;
    s.config_text = "{";
    s.config_lines = 0;
    return true;
  }
  return false;
}

}  // namespace

void finish_block(DeepSpeedLogParser::State& s) {
  if (s.block == LogBlock::kUserConfig) finish_user_config(s);
  s.block = LogBlock::kNone;
}

bool handle_block_line(DeepSpeedLogParser::State& s, const LogLineParts& parts, std::string_view raw) {
  switch (s.block) {
    case LogBlock::kFlopsSummary:
      // The summary ends where the aggregated or detailed profile begins.
      if (starts_with(raw, "----") || starts_with(trim(raw), "Top ")) break;
      handle_flops_figure(s, raw);
      return true;
    case LogBlock::kCommsTable:
      if (handle_comms_table_line(s, raw)) return true;
      if (starts_with(raw, "____") || starts_with(raw, "Breakdown with straggler")) {
        s.block = LogBlock::kStragglerTable;  // the straggler section repeats the ops: not summaries
        return true;
      }
      break;
    case LogBlock::kStragglerTable:
      if (!raw.empty() && (raw[0] == ' ' || raw[0] == '-' || starts_with(raw, "Comm. Op") ||
                           raw.find(' ') == std::string_view::npos))
        return true;
      break;
    case LogBlock::kUserConfig:
      s.config_text += "\n" + std::string(raw);
      if (raw == "}" || ++s.config_lines > kMaxConfigLines) {
        finish_block(s);
      }
      return true;
    case LogBlock::kNone: return start_block(s, parts);
  }
  finish_block(s);
  return start_block(s, parts);
}

}  // namespace shardscope::sessions
