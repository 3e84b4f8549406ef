#include "app/gui/launch_spec.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>

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

std::vector<std::string> launch_arguments(const LaunchSpec& s) {
  require(!s.config_path.empty(), "Config: choose a DeepSpeed config file or use the Config Editor's document");
  require(!s.session_file.empty(), "Session file: choose where the run is recorded (a .db file)");
  require(s.processes >= 1, "Processes: at least 1");
  require(s.steps >= 1, "Steps: at least 1");
  std::vector<std::string> a = {"launch", s.use_gpus ? "--num_gpus" : "--num_procs", std::to_string(s.processes),
                                "--session", s.session_file};
  if (!s.name.empty()) a.insert(a.end(), {"--name", s.name});
  if (s.master_port > 0) a.insert(a.end(), {"--master_port", std::to_string(s.master_port)});
  a.insert(a.end(), {"--", "--config", s.config_path, "--model", s.model});
  if (!s.hf_config.empty()) {
    a.insert(a.end(), {"--model-config", s.hf_config});
  } else {
    a.insert(a.end(), {"--layers", std::to_string(s.layers), "--hidden", std::to_string(s.hidden), "--heads",
                       std::to_string(s.heads), "--vocab", std::to_string(s.vocab)});
  }
  a.insert(a.end(), {"--seq-len", std::to_string(s.seq_len)});
  if (!s.weights.empty()) a.insert(a.end(), {"--weights", s.weights});
  a.insert(a.end(), {"--data", s.data.empty() ? "synthetic" : s.data, "--steps", std::to_string(s.steps)});
  return a;
}

std::string shell_command(const std::string& program, const std::vector<std::string>& args) {
  auto quote = [](const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") ==
                          std::string::npos)
      return s;
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  std::string line = quote(program);
  for (const auto& a : args) line += " " + quote(a);
  return line;
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
