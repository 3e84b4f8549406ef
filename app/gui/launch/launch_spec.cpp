#include "app/gui/launch/launch_spec.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>

#include "app/gui/common/cli_locator.hpp"
#include "configs/shell_words.hpp"

namespace shardscope::gui {
namespace {

constexpr const char* kLauncherPrefix = "shardscope launch: ";
constexpr const char* kWatchPrefix = "shardscope watch: ";
// The CLI's own refusal of its flags before it runs anything (command_edge.cpp prints UsageError so):
// "shardscope: watch: 'deepspeed' is not an executable on PATH; ...". A one-rank run's lines have
// no prefix, and its rank's own errors read "shardscope: error: ...": only the command's name says
// the line is the launcher's or watch's.
constexpr const char* kCliWatchPrefix = "shardscope: watch: ";
constexpr const char* kCliLaunchPrefix = "shardscope: launch: ";

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

/// The launcher's (or the watcher's) own line: not a rank's output.
bool is_launcher_line(const std::string& line) {
  return starts_with(line, kLauncherPrefix) || starts_with(line, kWatchPrefix) || starts_with(line, kCliWatchPrefix) ||
         starts_with(line, kCliLaunchPrefix);
}

std::string without_launcher_prefix(const std::string& line) {
  if (starts_with(line, kLauncherPrefix)) return line.substr(std::string(kLauncherPrefix).size());
  if (starts_with(line, kWatchPrefix)) return line.substr(std::string(kWatchPrefix).size());
  return line;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

bool contains_word(const std::string& text, const char* word) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find(word) != std::string::npos;
}

// "error" or a class named like one ("RuntimeError", "NCCLError"), not "errors": a summary's
// "warnings / errors 0 / 0" reports a count, it is not one. The same for "warning".
std::regex word_ending_in(const char* what) {
  return std::regex(std::string("(^|[^a-z])[a-z]*") + what + "([^a-z]|$)", std::regex::icase | std::regex::optimize);
}

LineLevel level_of(const std::string& text, bool from_stderr) {
  static const std::regex error = word_ending_in("error"), exception = word_ending_in("exception"),
                          warning = word_ending_in("warning");
  if (std::regex_search(text, error) || contains_word(text, "traceback") || contains_word(text, "first rank to fail") ||
      contains_word(text, "terminate called") || std::regex_search(text, exception))
    return LineLevel::kError;
  if (std::regex_search(text, warning) || contains_word(text, "overflow") || contains_word(text, "interrupted"))
    return LineLevel::kWarning;
  if (contains_word(text, "debug")) return LineLevel::kDebug;
  (void)from_stderr;  // ranks print progress on stderr too: the stream alone says nothing about severity
  return LineLevel::kInfo;
}

void add_if(std::vector<std::string>& a, const char* flag, const std::string& value) {
  if (!value.empty()) a.insert(a.end(), {flag, value});
}

void add_if(std::vector<std::string>& a, const char* flag, int value) {
  if (value > 0) a.insert(a.end(), {flag, std::to_string(value)});
}

// DeepSpeed's runner flags for the hosts of a hostfile: which hosts, how many ranks on each, how
// the node agents are started. Ranks: N CPU ranks per host, or GPUs (--include, --num_gpus N, or
// every slot of every host when neither is given).
void add_host_selection(std::vector<std::string>& a, const LaunchSpec& s) {
  require(s.launcher.empty() || s.launcher == "ssh" || s.launcher == "pdsh",
          "Launcher: '" + s.launcher + "' is not ssh or pdsh (the page starts node agents with one of them)");
  require(s.use_gpus || s.processes >= 1, "Ranks per host: at least 1 CPU rank");
  a.insert(a.end(), {"--hostfile", s.hostfile});
  add_if(a, "--num_nodes", s.num_nodes);
  if (!s.use_gpus) a.insert(a.end(), {"--num_procs", std::to_string(s.processes)});
  else if (!s.include.empty()) a.insert(a.end(), {"--include", s.include});
  else add_if(a, "--num_gpus", s.processes);
  add_if(a, "--exclude", s.exclude);
  add_if(a, "--launcher", s.launcher);
  add_if(a, "--ssh_port", s.ssh_port);
  add_if(a, "--launcher_args", s.launcher_args);
}

void add_local_selection(std::vector<std::string>& a, const LaunchSpec& s) {
  require(s.processes >= 1, "Ranks: at least 1");
  if (!s.use_gpus) a.insert(a.end(), {"--num_procs", std::to_string(s.processes)});
  else if (!s.include.empty()) a.insert(a.end(), {"--include", s.include});
  else a.insert(a.end(), {"--num_gpus", std::to_string(s.processes)});
}

}  // namespace

std::vector<std::string> launcher_arguments(const LaunchSpec& s) {
  require(!s.session_file.empty(), "Session file: choose where the run is recorded (a .db file)");
  std::vector<std::string> a;
  if (s.hostfile.empty()) add_local_selection(a, s);
  else add_host_selection(a, s);
  a.insert(a.end(), {"--session", s.session_file});
  add_if(a, "--name", s.name);
  add_if(a, "--master_addr", s.master_addr);
  add_if(a, "--master_port", s.master_port);
  add_if(a, "--enable_each_rank_log", s.each_rank_log_dir);
  add_if(a, "--hang-after", s.hang_after_s);
  if (s.stop_on_hang) a.insert(a.end(), {"--on-hang", "stop"});
  return a;
}

std::vector<std::string> preflight_arguments(const LaunchSpec& s) {
  require(!s.hostfile.empty(), "Hostfile: the preflight checks the hosts of a hostfile; open or save one first");
  std::vector<std::string> a = {"launch", "--preflight", "--json"};
  add_host_selection(a, s);
  add_if(a, "--master_addr", s.master_addr);
  add_if(a, "--master_port", s.master_port);
  return a;
}

std::vector<std::string> watch_arguments(const WatchSpec& s) {
  require(!s.command.empty(), "Command: give the command to run, e.g. deepspeed train.py --deepspeed ds.json");
  require(!s.session_file.empty(), "Session file: choose where the run is recorded (a .db file)");
  require(s.grace_s >= 0, "Grace: at least 0 s");
  std::vector<std::string> a = {"watch", "--db", s.session_file};
  add_if(a, "--name", s.name);
  a.insert(a.end(), {"--grace", std::to_string(s.grace_s), "--"});
  a.insert(a.end(), s.command.begin(), s.command.end());
  return a;
}

std::vector<std::string> parse_environment_lines(const std::string& text) {
  static const std::regex kEntry(R"(^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$)");
  std::vector<std::string> out;
  std::size_t start = 0;
  for (int line = 1; start <= text.size(); ++line) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string entry = text.substr(start, end - start);
    start = end + 1;
    if (!entry.empty() && entry.back() == '\r') entry.pop_back();
    const auto first = entry.find_first_not_of(" \t");
    if (first == std::string::npos || entry[first] == '#') continue;
    std::smatch m;
    require(std::regex_match(entry, m, kEntry), "Environment: line " + std::to_string(line) + " '" + entry +
                                                    "' is not KEY=VALUE (e.g. NCCL_DEBUG=INFO; a name of letters, digits and _)");
    out.push_back(m[1].str() + "=" + m[2].str());
  }
  return out;
}

std::string watch_command_line(const WatchSpec& spec) {
  const std::string watch = shell_command("shardscope", watch_arguments(spec));
  return spec.environment.empty() ? watch : shell_command("env", spec.environment) + " " + watch;
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
  // Without a folder there is nothing to save into: the field is disabled then, and never passed.
  if (s.save_every > 0 && !s.save_dir.empty()) a.insert(a.end(), {"--save-every", std::to_string(s.save_every)});
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

std::string rank_label(int rank, const std::string& host) {
  if (rank < 0) return "launch";
  return host.empty() ? "rank " + std::to_string(rank) : host + ":" + std::to_string(rank);
}

ConsoleLine parse_console_line(const std::string& line, bool from_stderr, int single_rank) {
  // One machine: "[rank R] "; across hosts the launcher writes "[host:R] " (an IPv6 host keeps its colons).
  static const std::regex kRankPrefix(R"(^\[(?:rank (\d+)|([^\]\s]+):(\d+))\] ?)");
  ConsoleLine out;
  std::smatch m;
  if (std::regex_search(line, m, kRankPrefix)) {
    out.rank = std::stoi(m[1].matched ? m[1].str() : m[3].str());
    if (m[2].matched) out.host = m[2].str();
    out.text = line.substr(static_cast<std::size_t>(m.length(0)));
  } else {
    out.rank = is_launcher_line(line) ? -1 : single_rank;
    out.text = line;
  }
  out.level = level_of(out.text, from_stderr);
  return out;
}

ConsoleLine ConsoleReader::read(const std::string& line, bool from_stderr) {
  // On stdout a launcher's own line comes only as the header of its closing summary (its other
  // messages go to stderr): the lines after it are the summary, taken as they are.
  if (!from_stderr && (starts_with(line, kLauncherPrefix) || starts_with(line, kWatchPrefix))) in_summary_ = true;
  if (from_stderr || !in_summary_) return parse_console_line(line, from_stderr, single_rank_);
  ConsoleLine out;
  out.level = level_of(line, from_stderr);
  out.text = line;
  out.summary = true;
  return out;
}

namespace {

// "[host] rank R pid P (device), rank R2 pid P2 (device)": the ranks a host started.
void read_rank_pids(const std::string& text, LaunchFacts& facts) {
  static const std::regex kPid(R"(rank (\d+) pid (\d+))");
  static const std::regex kHost(R"(^\[([^\]]+)\] )");
  std::smatch host;
  const bool across_hosts = std::regex_search(text, host, kHost);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPid); it != std::sregex_iterator(); ++it) {
    const int rank = std::stoi((*it)[1].str());
    // A host's pids are its own: the GUI may signal only ranks on this machine (a remote pid here
    // is some unrelated process); across hosts the launcher and its agents end every rank.
    if (across_hosts) facts.rank_hosts[rank] = host[1].str();
    else facts.rank_pids.emplace_back(rank, std::stoll((*it)[2].str()));
  }
}

// The closing line that names the first failure: "rank R exited ... (the first rank to fail)" on
// one machine; "host:R (pid P) exited ... (the first failure)" or "host H ..." across hosts.
bool read_first_failure(const std::string& text, LaunchFacts& facts) {
  static const std::regex kLocal(R"(rank (\d+)\b.*\(the first rank to fail\))");
  static const std::regex kHostRank(R"(^(\S+):(\d+) .*\(the first failure\))");
  static const std::regex kHost(R"(^((?:host )?\S+) .*\(the first failure\))");
  std::smatch m;
  if (std::regex_search(text, m, kLocal)) {
    facts.failed_rank = std::stoi(m[1].str());
    facts.failed_who = "rank " + m[1].str();
  } else if (std::regex_search(text, m, kHostRank)) {
    facts.failed_rank = std::stoi(m[2].str());
    facts.failed_who = m[1].str() + ":" + m[2].str();
  } else if (std::regex_search(text, m, kHost)) {
    facts.failed_who = m[1].str();
  } else {
    return false;
  }
  facts.failure = text;
  return true;
}

}  // namespace

void read_launcher_line(const std::string& line, LaunchFacts& facts) {
  static const std::regex kSession(R"((?:^|, )session ([0-9a-f]{8,}) in )");
  const std::string text = without_launcher_prefix(line);
  std::smatch m;
  if (std::regex_search(text, m, kSession)) facts.session_uid = m[1].str();
  if (text.find(" pid ") != std::string::npos) read_rank_pids(text, facts);
  if (read_first_failure(text, facts)) return;
  if (!facts.failed_who.empty() && is_launcher_line(line) && facts.failure.size() < 4000)
    facts.failure += "\n" + text;  // "last lines of rank R's stderr:" and those lines
}

}  // namespace shardscope::gui
