#pragma once
// What the Launch & Watch page starts, as a plain struct, and how the launcher's output reads
// back: the `shardscope launch` argument list (its CLI twin is exactly that command line), the
// `[rank R] ` prefix of rank lines, the session uid and rank pids the launcher announces, and the
// first failing rank it reports.

#include <optional>
#include <string>
#include <vector>

namespace shardscope::gui {

struct LaunchSpec {
  std::string config_path;             ///< DeepSpeed config file (the editor's document is saved to one)
  std::string model = "gpt2";          ///< mlp | gpt2 | llama
  std::string hf_config;               ///< config.json giving the shape; overrides the fields below
  std::string weights;                 ///< optional safetensors weights
  int layers = 2, hidden = 128, heads = 4, seq_len = 64, vocab = 512;
  std::string data = "synthetic";      ///< "synthetic" or a token file
  bool use_gpus = false;               ///< N GPUs (--num_gpus) or N CPU processes (--num_procs)
  int processes = 2;
  int steps = 50;
  std::string session_file;
  std::string name;                    ///< session name; empty = the config file's name
  int master_port = 0;                 ///< rendezvous port; 0 = the launcher's default (29500)
};

/// The arguments after `shardscope`: `launch --num_procs N --session FILE [--name X] -- <train args>`.
/// Throws std::invalid_argument naming the field when a required one is empty or out of range.
std::vector<std::string> launch_arguments(const LaunchSpec& spec);
/// The command as a shell line (quoted where needed), for the page's "CLI twin" label.
std::string shell_command(const std::string& program, const std::vector<std::string>& args);

enum class LineLevel { kDebug, kInfo, kWarning, kError };

struct ConsoleLine {
  int rank = -1;  ///< -1: the launcher itself (or a single-rank run's own output)
  LineLevel level = LineLevel::kInfo;
  std::string text;
};

/// Splits `[rank R] text` into R and text; other lines are the launcher's (rank -1, or
/// `single_rank` when the run has one rank and so no prefix). The level is read from the text.
ConsoleLine parse_console_line(const std::string& line, bool from_stderr, int single_rank = -1);

/// What the launcher tells about the run, gathered line by line.
struct LaunchFacts {
  std::string session_uid;                          ///< from "..., session <uid> in <file>"
  std::vector<std::pair<int, long long>> rank_pids; ///< from "rank R pid P (device), ..."
  std::optional<int> failed_rank;                   ///< from "... (the first rank to fail)"
  std::string failure;                              ///< that line and the stderr lines after it
};

/// Updates `facts` from one launcher line (without the rank prefix).
void read_launcher_line(const std::string& line, LaunchFacts& facts);

}  // namespace shardscope::gui
