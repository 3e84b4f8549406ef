#pragma once
// What the Launch & Watch page starts, as a plain struct, and how the launcher's output reads
// back: the `shardscope launch` argument list (its CLI twin is exactly that command line), the
// preflight's and `shardscope watch`'s argument lists, the `[rank R] ` / `[host:R] ` prefix of rank
// lines, the session uid and rank pids (with their hosts) the launcher announces, and the first
// failing rank it reports.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::gui {

struct LaunchSpec {
  // The DeepSpeed config and what overrides it.
  std::string config_path;             ///< DeepSpeed config file (the editor's document is saved to one)
  std::vector<std::string> overrides;  ///< --set KEY=VALUE, in order
  // Model and data.
  std::string model = "gpt2";          ///< mlp | gpt2 | llama
  std::string hf_config;               ///< config.json giving the shape; overrides the fields below
  std::string weights;                 ///< optional safetensors weights
  int layers = 2, hidden = 128, heads = 4, seq_len = 64, vocab = 512;
  int kv_heads = 0;                    ///< --kv-heads (llama); 0 = the engine's default
  bool activation_checkpointing = false;
  std::string data = "synthetic";      ///< "synthetic" or a token file
  // Where: this machine's CPU processes or GPUs, or the hosts of a hostfile.
  bool use_gpus = false;               ///< N GPUs (--num_gpus) or N CPU processes (--num_procs)
  int processes = 2;                   ///< per host with a hostfile; 0 there = every slot (GPUs)
  std::string include;                 ///< --include localhost:0,2 or worker-0@worker-1:0,2, instead of --num_gpus
  // These hosts (DeepSpeed's runner flags): set when hostfile is not empty.
  std::string hostfile;                ///< --hostfile FILE; empty = this machine only
  int num_nodes = 0;                   ///< --num_nodes N; 0 = every host of the hostfile
  std::string exclude;                 ///< --exclude worker-1:0
  std::string launcher;                ///< --launcher ssh|pdsh; empty = ssh (the default)
  int ssh_port = 0;                    ///< --ssh_port; 0 = ssh's own default
  std::string launcher_args;           ///< --launcher_args: options for ssh/pdsh, one string (e.g. "-F ssh_config")
  std::string master_addr;             ///< --master_addr; empty = the launcher's default
  int master_port = 0;                 ///< rendezvous port; 0 = the launcher's default (29500)
  std::string each_rank_log_dir;       ///< --enable_each_rank_log DIR
  // The run.
  int steps = 50;
  std::string session_file;
  std::string name;                    ///< session name; empty = the config file's name
  int seed = 0;                        ///< --seed; 0 = the engine's default (42)
  // The run doctor (docs/doctor.md): what a hang is and what happens then.
  int hang_after_s = 0;                ///< --hang-after SECONDS; 0 = the launcher's default (max(60 s, 20 x median step))
  bool stop_on_hang = false;           ///< --on-hang stop; else report (the launcher's default)
  // Checkpoints (DeepSpeed layout).
  std::string save_dir;                ///< --save DIR, written at the end
  int save_every = 0;                  ///< --save-every K; 0 = only at the end
  std::string load_dir;                ///< --load DIR: resume from DIR/latest
  // Profiling: the GPU activity (kernels, copies, NVTX) of `profile_count` steps from `profile_start`.
  int profile_start = 0;               ///< 0 = no profiled window
  int profile_count = 1;
  std::vector<std::string> extra_train_args;  ///< appended to the train arguments as given
};

/// The launcher's own flags (before `--`): where the ranks run, rendezvous, session.
std::vector<std::string> launcher_arguments(const LaunchSpec& spec);
/// The arguments every `shardscope train` rank gets (after `--`).
std::vector<std::string> train_arguments(const LaunchSpec& spec);
/// The arguments after `shardscope`: `launch <launcher arguments> -- <train arguments>`.
/// Throws std::invalid_argument naming the field when a required one is empty or out of range.
std::vector<std::string> launch_arguments(const LaunchSpec& spec);
/// `launch --preflight --json --hostfile F` with the spec's node selection: the hosts' checks.
/// Throws std::invalid_argument when the spec has no hostfile.
std::vector<std::string> preflight_arguments(const LaunchSpec& spec);

/// A user's own command followed live by `shardscope watch` (issue 20's "watch a DeepSpeed run").
struct WatchSpec {
  std::vector<std::string> command;  ///< e.g. deepspeed train.py --deepspeed ds.json
  std::string session_file;          ///< --db
  std::string name;                  ///< --name; empty = the config file's name
  std::string working_dir;           ///< where the command runs; empty = the GUI's own
  int grace_s = 5;                   ///< --grace: SIGTERM to SIGKILL of the command (below the GUI's own grace)
  std::vector<std::string> environment;  ///< KEY=VALUE set for watch and so for the command (`env K=V shardscope watch ...`)
};

/// Lines of KEY=VALUE (blank lines and `#` comments skipped, `export ` allowed) as environment
/// entries; throws std::invalid_argument naming the line when one is not KEY=VALUE with a shell name.
std::vector<std::string> parse_environment_lines(const std::string& text);

/// The watch command line a terminal runs: `env K=V ... shardscope watch ...` with the environment.
std::string watch_command_line(const WatchSpec& spec);

/// `watch --db F [--name N] --grace S -- <command>`; throws std::invalid_argument naming the field.
std::vector<std::string> watch_arguments(const WatchSpec& spec);

/// Splits a line into words as a POSIX shell would (single and double quotes, backslash escapes);
/// throws std::invalid_argument for an unclosed quote.
std::vector<std::string> split_shell_words(const std::string& text);

enum class LineLevel { kDebug, kInfo, kWarning, kError };

struct ConsoleLine {
  int rank = -1;  ///< -1: the launcher itself (or a single-rank run's own output)
  LineLevel level = LineLevel::kInfo;
  std::string text;
  std::string host;  ///< the rank's host in a run across hosts (`[host:R] ` lines); empty on one machine
  bool summary = false;  ///< the launcher's (or watch's) closing summary of the session: rank -1, not the run's output
};

/// "host:R" when the host is known, else "rank R" (-1: "launch").
std::string rank_label(int rank, const std::string& host);

/// Splits `[rank R] text` (one machine) or `[host:R] text` (across hosts) into R, host and text;
/// other lines are the launcher's (rank -1, or
/// `single_rank` when the run has one rank and so no prefix). The level is read from the text.
ConsoleLine parse_console_line(const std::string& line, bool from_stderr, int single_rank = -1);

/// Reads the launcher's or `shardscope watch`'s output line by line: parse_console_line, plus what
/// one line alone does not tell. When the run is over, launch and watch print a header of their own
/// on stdout (`shardscope launch: the run ended ...`, `shardscope watch: the command ended ...`) and
/// then the session's summary without a prefix: every stdout line from that header on is theirs
/// (rank -1, `summary`), not rank 0's, even in a one-rank run whose output has no prefix either.
/// Only stdout: the stderr pipe, read separately, may still bring the run's last lines.
class ConsoleReader {
 public:
  /// `single_rank`: the rank of unprefixed lines (0 in a one-rank run, else -1), as in parse_console_line.
  explicit ConsoleReader(int single_rank = -1) : single_rank_(single_rank) {}
  ConsoleLine read(const std::string& line, bool from_stderr);

 private:
  int single_rank_;
  bool in_summary_ = false;
};

/// What the launcher tells about the run, gathered line by line.
struct LaunchFacts {
  std::string session_uid;                          ///< from "session <uid> in <file>"
  std::vector<std::pair<int, long long>> rank_pids; ///< from "rank R pid P (device), ...": this machine's ranks only
  std::map<int, std::string> rank_hosts;            ///< rank -> host, from "[host] rank R pid P ..." across hosts
  std::optional<int> failed_rank;                   ///< from "... (the first rank to fail)" or "host:R ... (the first failure)"
  std::string failed_who;                           ///< "rank R", "host:R", or a host that was lost
  std::string failure;                              ///< that line and the stderr lines after it
};

/// Updates `facts` from one launcher line (without the rank prefix).
void read_launcher_line(const std::string& line, LaunchFacts& facts);

}  // namespace shardscope::gui
