// Lines that describe the run rather than a step: the launcher's (runner.py, launch.py) hosts,
// ranks, pids and exits, DeepSpeed's version line, the accelerator and backend it picked, and the
// engine's config dump (train_batch_size, world_size).
#include <cctype>

#include "sessions/import/deepspeed_log_state.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace {

// Python's repr of a list of strings: "['python', '-u', 'train.py']".
std::vector<std::string> python_string_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = text.find_first_of("'\"", at)) != std::string_view::npos) {
    const char quote = text[at];
    const auto end = text.find(quote, at + 1);
    if (end == std::string_view::npos) break;
    out.emplace_back(text.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

// "{'worker-1': [0, 1], 'worker-2': [2, 3]}" -> hosts with their global ranks.
std::vector<std::pair<std::string, std::vector<int>>> python_host_ranks(std::string_view text) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  std::size_t at = 0;
  while ((at = text.find('\'', at)) != std::string_view::npos) {
    const auto end = text.find('\'', at + 1);
    const auto open = end == std::string_view::npos ? end : text.find('[', end);
    const auto close = open == std::string_view::npos ? open : text.find(']', open);
    if (close == std::string_view::npos) break;
    std::vector<int> ranks;
    std::string_view items = text.substr(open + 1, close - open - 1);
    while (!items.empty()) {
      const auto comma = items.find(',');
      if (auto rank = parse_integer(trim(items.substr(0, comma))); rank && *rank >= 0 && *rank < (1 << 20))
        ranks.push_back(static_cast<int>(*rank));
      items = comma == std::string_view::npos ? std::string_view() : items.substr(comma + 1);
    }
    out.emplace_back(std::string(text.substr(at + 1, end - at - 1)), std::move(ranks));
    at = close + 1;
  }
  return out;
}

RankInfo& rank_info(DeepSpeedLogFacts& facts, int rank) {
  for (auto& r : facts.ranks)
    if (r.rank == rank) return r;
  facts.ranks.push_back({rank, rank, "", 0, ""});
  return facts.ranks.back();
}

std::optional<int> local_rank_argument(const std::vector<std::string>& argv) {
  for (const auto& arg : argv)
    if (starts_with(arg, "--local_rank="))
      if (auto rank = parse_integer(std::string_view(arg).substr(13)); rank && *rank >= 0 && *rank < (1 << 20))
        return static_cast<int>(*rank);
  return std::nullopt;
}

bool handle_launcher_line(DeepSpeedLogParser::State& s, std::string_view m) {
  auto& facts = s.facts;
  if (starts_with(m, "global_rank_mapping=")) {
    const auto brace = m.find('{');
    if (brace == std::string_view::npos) return true;
    for (const auto& [host, ranks] : python_host_ranks(m.substr(brace)))
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        RankInfo& info = rank_info(facts, ranks[i]);
        info.host = host;
        info.local_rank = static_cast<int>(i);
      }
    return true;
  }
  if (starts_with(m, "dist_world_size=")) {
    if (auto n = parse_integer(m.substr(16)); n && *n > 0 && *n < (1 << 20)) facts.world_size = static_cast<int>(*n);
    return true;
  }
  if (starts_with(m, "process ") && m.find(" spawned with command: ") != std::string_view::npos) {
    const auto pid = parse_integer(m.substr(8, m.find(' ', 8) - 8));
    const auto argv = python_string_list(m.substr(m.find("command: ")));
    if (auto local = local_rank_argument(argv); pid && local) {
      s.pid_rank[*pid] = *local;
      for (auto& r : facts.ranks)
        if (r.local_rank == *local) r.pid = *pid;
    }
    return true;
  }
  if (starts_with(m, "Process ") && m.find(" exits successfully") != std::string_view::npos) {
    const auto pid = parse_integer(m.substr(8, m.find(' ', 8) - 8));
    if (auto it = pid ? s.pid_rank.find(*pid) : s.pid_rank.end(); it != s.pid_rank.end())
      for (auto& r : facts.ranks)
        if (r.local_rank == it->second) facts.exit_codes[r.rank] = 0;
    return true;
  }
  if (const auto at = m.find("exits with return code = "); at != std::string_view::npos) {
    const auto code = parse_integer(trim(m.substr(at + 25)));
    if (auto local = local_rank_argument(python_string_list(m.substr(0, at))); code && local)
      for (auto& r : facts.ranks)
        if (r.local_rank == *local) facts.exit_codes[r.rank] = static_cast<int>(*code);
    return true;
  }
  if (starts_with(m, "cmd = ")) {
    facts.command.clear();
    std::string_view rest = m.substr(6);
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      if (space) facts.command.emplace_back(rest.substr(0, space));
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    return true;
  }
  return false;
}

bool handle_version_line(DeepSpeedLogParser::State& s, std::string_view m) {
  auto& facts = s.facts;
  if (starts_with(m, "DeepSpeed info: version=")) {
    facts.deepspeed_version = std::string(field_after(m, "version").value_or(""));
    facts.deepspeed_git_hash = std::string(field_after(m, "git-hash").value_or(""));
    return true;
  }
  // real_accelerator.py: "Setting ds_accelerator to cuda (auto detect)", "Setting accelerator to CPU. ..."
  for (std::string_view prefix : {"Setting ds_accelerator to ", "Setting accelerator to "}) {
    if (!starts_with(m, prefix)) continue;
    std::string name(m.substr(prefix.size(), m.find_first_of(" .", prefix.size()) - prefix.size()));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    facts.accelerator = name;
    return true;
  }
  if (const auto at = m.find("Initializing TorchBackend in DeepSpeed with backend "); at != std::string_view::npos) {
    facts.backend = std::string(trim(m.substr(at + 52)));
    return true;
  }
  return false;
}

// config.py's dump: "  train_batch_size ............. 8".
bool handle_config_dump_line(DeepSpeedLogParser::State& s, const LogLineParts& parts) {
  if (parts.source.find("config.py") == std::string_view::npos) return false;
  const std::string_view m = trim(parts.message);
  const auto space = m.find(' ');
  if (space == std::string_view::npos) return false;
  const auto key = m.substr(0, space);
  const auto value = trim(m.substr(m.find_last_of(" .") + 1));
  if (key == "train_batch_size") {
    if (auto n = parse_integer(value); n && *n > 0) s.facts.train_batch_size = *n;
  } else if (key == "world_size") {
    if (auto n = parse_integer(value); n && *n > 0 && *n < (1 << 20)) s.facts.world_size = static_cast<int>(*n);
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool handle_run_fact_line(DeepSpeedLogParser::State& s, const LogLineParts& parts) {
  return handle_launcher_line(s, parts.message) || handle_version_line(s, parts.message) ||
         handle_config_dump_line(s, parts);
}

}  // namespace shardscope::sessions
