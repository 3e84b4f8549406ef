#include "app/gui/launch_spec.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>

#include "configs/shell_words.hpp"

namespace shardscope::gui {
namespace {

constexpr const char* kLauncherPrefix = "shardscope launch: ";

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

bool contains_word(const std::string& text, const char* word) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find(word) != std::string::npos;
}

LineLevel level_of(const std::string& text, bool from_stderr) {
  if (contains_word(text, "error") || contains_word(text, "traceback") || contains_word(text, "first rank to fail") ||
      contains_word(text, "terminate called") || contains_word(text, "exception"))
    return LineLevel::kError;
  if (contains_word(text, "warning") || contains_word(text, "overflow") || contains_word(text, "interrupted"))
    return LineLevel::kWarning;
  if (contains_word(text, "debug")) return LineLevel::kDebug;
  (void)from_stderr;  // ranks print progress on stderr too: the stream alone says nothing about severity
  return LineLevel::kInfo;
}

}  // namespace

std::vector<std::string> launcher_arguments(const LaunchSpec& s) {
  require(s.processes >= 1, "Ranks: at least 1");
  require(!s.session_file.empty(), "Session file: choose where the run is recorded (a .db file)");
  std::vector<std::string> a;
  if (!s.use_gpus) a.insert(a.end(), {"--num_procs", std::to_string(s.processes)});
  else if (!s.include.empty()) a.insert(a.end(), {"--include", s.include});
  else a.insert(a.end(), {"--num_gpus", std::to_string(s.processes)});
  a.insert(a.end(), {"--session", s.session_file});
  if (!s.name.empty()) a.insert(a.end(), {"--name", s.name});
  if (!s.master_addr.empty()) a.insert(a.end(), {"--master_addr", s.master_addr});
  if (s.master_port > 0) a.insert(a.end(), {"--master_port", std::to_string(s.master_port)});
  if (!s.each_rank_log_dir.empty()) a.insert(a.end(), {"--enable_each_rank_log", s.each_rank_log_dir});
  return a;
}

std::vector<std::string> train_arguments(const LaunchSpec& s) {
  require(!s.config_path.empty(), "Config: choose a DeepSpeed config file or use the Config Editor's document");
  require(s.steps >= 1, "Steps: at least 1");
  require(s.profile_start == 0 || s.profile_count >= 1, "Profile steps: at least 1 step in the window");
  std::vector<std::string> a = {"--config", s.config_path};
  for (const auto& o : s.overrides) {
    require(o.find('=') != std::string::npos && o.front() != '=',
            "Overrides: '" + o + "' is not KEY=VALUE (e.g. zero_optimization.stage=3)");
    a.insert(a.end(), {"--set", o});
  }
  a.insert(a.end(), {"--model", s.model});
  if (!s.hf_config.empty()) {
    a.insert(a.end(), {"--model-config", s.hf_config});
  } else {
    a.insert(a.end(), {"--layers", std::to_string(s.layers), "--hidden", std::to_string(s.hidden), "--heads",
                       std::to_string(s.heads), "--vocab", std::to_string(s.vocab)});
    if (s.kv_heads > 0) a.insert(a.end(), {"--kv-heads", std::to_string(s.kv_heads)});
  }
  a.insert(a.end(), {"--seq-len", std::to_string(s.seq_len)});
  if (s.activation_checkpointing) a.push_back("--activation-checkpointing");
  if (!s.weights.empty()) a.insert(a.end(), {"--weights", s.weights});
  a.insert(a.end(), {"--data", s.data.empty() ? "synthetic" : s.data, "--steps", std::to_string(s.steps)});
  if (s.seed > 0) a.insert(a.end(), {"--seed", std::to_string(s.seed)});
  if (!s.save_dir.empty()) a.insert(a.end(), {"--save", s.save_dir});
  if (s.save_every > 0) a.insert(a.end(), {"--save-every", std::to_string(s.save_every)});
  if (!s.load_dir.empty()) a.insert(a.end(), {"--load", s.load_dir});
  if (s.profile_start > 0)
    a.insert(a.end(), {"--profile-steps", std::to_string(s.profile_start) + ":" + std::to_string(s.profile_count)});
  a.insert(a.end(), s.extra_train_args.begin(), s.extra_train_args.end());
  return a;
}

std::vector<std::string> launch_arguments(const LaunchSpec& s) {
  std::vector<std::string> a = {"launch"};
  const auto launcher = launcher_arguments(s);
  const auto train = train_arguments(s);
  a.insert(a.end(), launcher.begin(), launcher.end());
  a.push_back("--");
  a.insert(a.end(), train.begin(), train.end());
  return a;
}

std::vector<std::string> split_shell_words(const std::string& text) {
  try {
    return configs::split_shell_words(text);
  } catch (const configs::UnclosedQuoteError& e) {
    throw std::invalid_argument(std::string("Extra arguments: ") + e.what());
  }
}

ConsoleLine parse_console_line(const std::string& line, bool from_stderr, int single_rank) {
  static const std::regex kRankPrefix(R"(^\[rank (\d+)\] ?)");
  ConsoleLine out;
  std::smatch m;
  if (std::regex_search(line, m, kRankPrefix)) {
    out.rank = std::stoi(m[1].str());
    out.text = line.substr(static_cast<std::size_t>(m.length(0)));
  } else {
    out.rank = line.rfind(kLauncherPrefix, 0) == 0 ? -1 : single_rank;
    out.text = line;
  }
  out.level = level_of(out.text, from_stderr);
  return out;
}

void read_launcher_line(const std::string& line, LaunchFacts& facts) {
  static const std::regex kSession(R"(, session ([0-9a-f]{8,}) in )");
  static const std::regex kPid(R"(rank (\d+) pid (\d+))");
  static const std::regex kFailed(R"(rank (\d+)\b.*\(the first rank to fail\))");
  const std::string text = line.rfind(kLauncherPrefix, 0) == 0 ? line.substr(std::string(kLauncherPrefix).size()) : line;
  std::smatch m;
  if (std::regex_search(text, m, kSession)) facts.session_uid = m[1].str();
  if (text.find(" pid ") != std::string::npos)
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kPid); it != std::sregex_iterator(); ++it)
      facts.rank_pids.emplace_back(std::stoi((*it)[1].str()), std::stoll((*it)[2].str()));
  if (std::regex_search(text, m, kFailed)) {
    facts.failed_rank = std::stoi(m[1].str());
    facts.failure = text;
  } else if (facts.failed_rank && line.rfind(kLauncherPrefix, 0) == 0 && facts.failure.size() < 4000) {
    facts.failure += "\n" + text;  // "last lines of rank R's stderr:" and those lines
  }
}

}  // namespace shardscope::gui
