#include "diagnosis/output_doctor.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace shardscope::diagnosis {
namespace {

using sessions::Finding;

constexpr std::size_t kMaxEvidence = 600;  // a finding quotes at most this much of its line

bool has(const std::string& line, const char* part) { return line.find(part) != std::string::npos; }

// The digits right after the first `key` at or past `from` ("SeqNum=42" -> 42); -1 when absent.
long long number_after(const std::string& line, const std::string& key, std::size_t from = 0) {
  const auto at = line.find(key, from);
  if (at == std::string::npos) return -1;
  const char* start = line.c_str() + at + key.size();
  if (*start == '-' || !std::isdigit(static_cast<unsigned char>(*start))) return -1;
  return std::strtoll(start, nullptr, 10);
}

// The text after `key` up to the first character of `stops` (or the end).
std::string text_after(const std::string& line, const std::string& key, const char* stops) {
  const auto at = line.find(key);
  if (at == std::string::npos) return "";
  const auto start = at + key.size();
  const auto end = line.find_first_of(stops, start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The text between `key` and the next `end` marker ("Tried to allocate 2.00 GiB. GPU" -> "2.00 GiB").
std::string text_between(const std::string& line, const std::string& key, const std::string& end) {
  const auto at = line.find(key);
  if (at == std::string::npos) return "";
  const auto start = at + key.size();
  const auto stop = line.find(end, start);
  return stop == std::string::npos ? "" : line.substr(start, stop - start);
}

// The text right before `end`, back to the last `start` before it ("..., and 2.1 GiB is reserved"
// with start "and ", end " is reserved" -> "2.1 GiB").
std::string text_before(const std::string& line, const std::string& start, const std::string& end) {
  const auto stop = line.find(end);
  if (stop == std::string::npos) return "";
  const auto at = line.rfind(start, stop);
  return at == std::string::npos ? "" : line.substr(at + start.size(), stop - at - start.size());
}

// The rank a line speaks for: c10d's "[PG ID 0 PG GUID 0(default_pg) Rank 3]" or "[Rank 3]", else
// torchrun's "[rank3]:" prefix; -1 when it names none.
int rank_of(const std::string& line) {
  if (const auto at = line.find("Rank "); at != std::string::npos) {
    const long long r = number_after(line, "Rank ", at);
    if (r >= 0 && r < (1 << 24) && line.find(']', at) != std::string::npos) return static_cast<int>(r);
  }
  if (line.rfind("[rank", 0) == 0) {
    const long long r = number_after(line, "[rank");
    if (r >= 0 && r < (1 << 24)) return static_cast<int>(r);
  }
  return -1;
}

std::string quoted(const std::string& line) {
  return line.size() <= kMaxEvidence ? line : line.substr(0, kMaxEvidence) + "...";
}

Finding base(const char* kind, const std::string& line, double now) {
  Finding f;
  f.kind = kind;
  f.severity = "error";
  f.found_at = now;
  const int rank = rank_of(line);
  if (rank >= 0) f.ranks = {rank};
  f.evidence = "output: " + quoted(line);
  return f;
}

std::string who(const Finding& f) { return f.ranks.empty() ? "a rank" : "rank " + std::to_string(f.ranks.front()); }

constexpr const char* kFindTheCulprit =
    "the rank named waits; the culprit is a rank that never entered that collective (it took another branch, "
    "ran out of data, or died first): read every rank's last lines, and rerun with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1 for the flight recorder's per-rank record of collectives; DeepSpeed's wait is "
    "DEEPSPEED_TIMEOUT minutes (10 by default)";

Finding watchdog_timeout(const std::string& line, double now) {
  Finding f = base("hang", line, now);
  const long long seq = number_after(line, "SeqNum=");
  const std::string op = text_after(line, "OpType=", ",) ");
  const long long ran_ms = number_after(line, "ran for ");
  const long long timeout_ms = number_after(line, "Timeout(ms)=");
  f.summary = who(f) + " waited in " + (op.empty() ? std::string("a collective") : op) +
              (seq >= 0 ? " #" + std::to_string(seq) : "") + " until c10d's watchdog ended it" +
              (ran_ms >= 0 ? " after " + std::to_string(ran_ms / 1000) + " s" : "") +
              (timeout_ms >= 0 ? " (timeout " + std::to_string(timeout_ms / 1000) + " s)" : "");
  f.suggested_fix = kFindTheCulprit;
  return f;
}

Finding gloo_timeout(const std::string& line, double now) {
  Finding f = base("hang", line, now);
  const long long ms = number_after(line, "Timed out waiting ");
  const std::string op = text_between(line, "ms for ", " operation");
  f.summary = who(f) + " timed out in gloo waiting " + std::to_string(std::max(0LL, ms) / 1000) + " s for a " +
              (op.empty() ? std::string("peer") : op) + ": its peers stopped sending";
  f.suggested_fix = kFindTheCulprit;
  return f;
}

Finding peer_lost(const std::string& line, double now) {
  Finding f = base("peer_lost", line, now);
  f.severity = "warning";
  f.summary = who(f) + " lost a peer (gloo: connection closed by peer): another rank ended first";
  f.suggested_fix = "this rank is a victim: the first rank to exit has the real error; look for its traceback above";
  return f;
}

std::string nccl_fix(const std::string& reason) {
  if (has(reason, "system error"))
    return "usually the network or shared memory: rerun with NCCL_DEBUG=INFO, set NCCL_SOCKET_IFNAME to the "
           "interface the hosts share, and in a container give /dev/shm room (docker --shm-size=16g)";
  if (has(reason, "remote"))
    return "a peer failed first: its own output has the real error";
  if (has(reason, "cuda"))
    return "a CUDA error in the work before the collective: rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel";
  if (has(reason, "invalid usage") || has(reason, "invalid argument"))
    return "the ranks called the collective with different sizes, dtypes or groups: compare what each rank passes";
  return "rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=ALL) for the failing call";
}

Finding nccl_error(const std::string& line, double now) {
  Finding f = base("nccl_error", line, now);
  // "NCCL error in: FILE:LINE, REASON (run with NCCL_DEBUG=INFO for details), NCCL version V"
  std::string reason;
  if (const auto at = line.find(", ", line.find("NCCL error in:")); at != std::string::npos) {
    const auto end = std::min(line.find(" (run with", at), line.find(", NCCL version", at));
    reason = line.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
  }
  const std::string version = text_after(line, "NCCL version ", " \r");
  f.summary = who(f) + ": NCCL error" + (reason.empty() ? std::string() : ": " + reason) +
              (version.empty() ? "" : " (NCCL " + version + ")");
  f.suggested_fix = nccl_fix(reason);
  return f;
}

// Sizes as the allocator prints them ("2.00 GiB", "512.00 MiB") in bytes; -1 when unreadable.
double bytes_of(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return -1;
  const std::string unit = text_after(std::string(end), " ", " .");
  const double scale = unit == "KiB" ? 1024.0 : unit == "MiB" ? 1048576.0 : unit == "GiB" ? 1073741824.0
                       : unit == "TiB" ? 1099511627776.0 : unit == "bytes" || unit == "B" ? 1.0 : -1;
  return scale < 0 ? -1 : value * scale;
}

std::string no_spaces(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  return text;
}

Finding cuda_oom(const std::string& line, double now, const std::string& config_path) {
  Finding f = base("cuda_oom", line, now);
  const std::string requested = text_between(line, "Tried to allocate ", ". ");
  const std::string gpu = text_between(line, "GPU ", " has a total capacity");
  const std::string capacity = text_between(line, "has a total capacity of ", " of which");
  const std::string free = text_between(line, " of which ", " is free");
  const std::string allocated = text_between(line, "Of the allocated memory ", " is allocated by PyTorch");
  const std::string reserved = text_before(line, "and ", " is reserved by PyTorch but unallocated");
  f.summary = who(f) + ": CUDA out of memory" + (requested.empty() ? "" : " asking for " + requested) +
              (gpu.empty() ? "" : " on GPU " + gpu) + (free.empty() ? "" : " (" + free + " free of " + capacity + ")");
  for (const auto& [name, value] : {std::pair<const char*, std::string>{"requested", requested}, {"capacity", capacity},
                                    {"free", free}, {"allocated by PyTorch", allocated},
                                    {"reserved but unallocated", reserved}})
    if (!value.empty()) f.evidence += std::string("\n") + name + ": " + value;
  const double unused = bytes_of(reserved), asked = bytes_of(requested);
  const std::string estimate = "`shardscope estimate --config " + (config_path.empty() ? "ds_config.json" : config_path) +
                               " --hf-config config.json --gpu-mem " + (capacity.empty() ? "SIZE" : no_spaces(capacity)) +
                               "` names the smallest change that fits (micro-batch, ZeRO stage, offload, activation "
                               "checkpointing)";
  f.suggested_fix = unused > 0 && asked > 0 && unused >= asked
                        ? "the cache holds enough but in pieces: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; if "
                          "it still fails, " + estimate
                        : estimate;
  return f;
}

Finding killed(const std::string& line, double now) {
  Finding f = base("host_oom", line, now);
  f.summary = who(f) + " was killed by SIGKILL (exit code -9): most often the kernel's OOM killer, the host out of "
                       "memory";
  f.suggested_fix = "see `dmesg | grep -i 'killed process'` on that host; host memory holds offloaded optimizer "
                    "states and pinned buffers: `shardscope estimate --config ... ` gives the per-node host bytes, and "
                    "fewer ranks per node, offload to NVMe or a smaller sub_group_size lower them";
  return f;
}

// The finding a line of output is, or nullopt.
std::optional<Finding> decode_line(const std::string& line, double now, const std::string& config_path) {
  if (has(line, "Watchdog caught collective operation timeout")) return watchdog_timeout(line, now);
  if (has(line, "Timed out waiting ") && has(line, "ms for ") && has(line, " operation")) return gloo_timeout(line, now);
  if (has(line, "Connection closed by peer")) return peer_lost(line, now);
  if (has(line, "NCCL error in:")) return nccl_error(line, now);
  if (has(line, "CUDA out of memory. Tried to allocate")) return cuda_oom(line, now, config_path);
  if (number_after(line, "exits with return code = -") == 9 || has(line, "(exitcode: -9)")) return killed(line, now);
  return std::nullopt;
}

// A line that speaks after a reported stall may be the stall's own end: a collective's timeout or
// a peer's error. Seconds after the first such line during which the stall may still be explained.
constexpr double kResumeGraceS = 5;

// The findings that say the silence before them was ranks waiting in a collective.
bool explains_a_stall(const Finding& f) { return f.kind == "hang" || f.kind == "nccl_error" || f.kind == "peer_lost"; }

double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

OutputDoctor::OutputDoctor(OutputDoctorOptions options) : options_(std::move(options)) {}

void OutputDoctor::activity(double now) {
  start(now);
  if (stalled_) resumed_at_ = now;
  stalled_ = false;
  last_activity_ = now;
}

void OutputDoctor::start(double now) {
  if (started_) return;
  started_ = true;
  last_activity_ = now;
}

std::optional<Finding> OutputDoctor::on_line(const std::string& line, double now) {
  activity(now);
  auto finding = decode_line(line, now, options_.config_path);
  // Once per kind, rank and what it says: the same timeout printed again (by every process of a
  // launcher that echoes its ranks) is one finding; another collective or size is another.
  const std::string rank = finding && !finding->ranks.empty() ? std::to_string(finding->ranks.front()) : "";
  if (!finding || !seen_.insert(finding->kind + "|" + rank + "|" + finding->summary).second) return std::nullopt;
  if (steps_ > 0) finding->first_step = finding->last_step = steps_;
  if (finding->severity == "error") reported_error_ = true;
  if (resumed_at_ && explains_a_stall(*finding)) {
    finding->evidence += "\nit ended the " + std::to_string(static_cast<long long>(*resumed_at_ - stall_began_)) +
                         " s of silence reported as a stall";
    resumed_at_.reset();  // the stall was a hang, not a slow stretch
  }
  return finding;
}

void OutputDoctor::on_steps(std::int64_t steps, double now) {
  start(now);
  if (steps <= steps_) return;
  steps_ = steps;
  activity(now);
  step_times_.push_back(now);
  if (step_times_.size() > 64) step_times_.erase(step_times_.begin());
}

double OutputDoctor::hang_bound() const {
  if (steps_ == 0) return std::max({options_.hang_after_s, options_.min_hang_s, options_.before_first_step_s});
  if (options_.hang_after_s > 0) return options_.hang_after_s;
  if (step_times_.size() < 3) return std::max(options_.min_hang_s, options_.before_first_step_s);
  std::vector<double> gaps;
  for (std::size_t i = 1; i < step_times_.size(); ++i) gaps.push_back(step_times_[i] - step_times_[i - 1]);
  return std::max(options_.min_hang_s, 20 * upper_median(gaps));
}

std::optional<Finding> OutputDoctor::check(double now) {
  start(now);
  if (resumed_at_ && (steps_ > stalled_at_step_ || now - *resumed_at_ >= kResumeGraceS)) return stall_ended();
  if (resumed_at_) return std::nullopt;
  const double silent = now - last_activity_;
  if (stalled_ || silent < hang_bound()) return std::nullopt;
  stalled_ = true;
  stall_began_ = last_activity_;
  stalled_at_step_ = steps_;
  Finding f;
  f.kind = "stall";
  f.severity = "error";
  f.found_at = now;
  if (steps_ > 0) f.first_step = f.last_step = steps_;
  f.summary = "the command has been silent for " + std::to_string(static_cast<long long>(silent)) +
              " s (no output line, no new step" + (steps_ > 0 ? " after step " + std::to_string(steps_) : "") +
              ") while it still runs: a hang, most likely ranks waiting in a collective";
  f.evidence = "hang bound: " + std::to_string(static_cast<long long>(hang_bound())) + " s" +
               (steps_ == 0 ? " (before the first step)" : options_.hang_after_s > 0 ? " (--hang-after)"
                                                                                    : " (20 x the median step time, at least 60 s)");
  f.suggested_fix = "py-spy dump --pid PID (each rank's Python stack) shows where every rank waits; c10d's watchdog "
                    "ends the collective after DEEPSPEED_TIMEOUT minutes (10 by default) and names a waiting rank; "
                    "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 records each rank's collectives";
  return f;
}

std::optional<Finding> OutputDoctor::finish() {
  if (resumed_at_) return stall_ended();
  return std::nullopt;
}

std::optional<Finding> OutputDoctor::stall_ended() {
  Finding f;
  f.kind = "stall_ended";
  f.severity = "info";
  f.found_at = *resumed_at_;
  if (steps_ > 0) f.first_step = f.last_step = steps_;
  f.summary = "the command spoke again after " + std::to_string(static_cast<long long>(*resumed_at_ - stall_began_)) +
              " s of silence: the stall reported before was a slow stretch (a checkpoint, an evaluation, a JIT "
              "build), not a hang";
  f.suggested_fix = "if such stretches are expected, raise --hang-after above them";
  resumed_at_.reset();
  return f;
}

}  // namespace shardscope::diagnosis
