#pragma once
// The run doctor for a command ShardScope did not start its ranks for (`shardscope watch`: a
// DeepSpeed, torchrun or Trainer run): what the command's own output says went wrong mid-run, one
// line at a time, and a stall while it still runs.
//
// Decoded lines: c10d's watchdog timeout ("Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=42, OpType=ALLREDUCE, ...) ran for 600034 milliseconds before timing out"),
// gloo's ("Timed out waiting 600000ms for recv operation to complete", "Connection closed by
// peer"), NCCL errors ("NCCL error in: ..., unhandled system error ..."), CUDA out of memory (the
// caching allocator's message: requested, capacity, free, allocated, reserved) and a process
// killed by SIGKILL (DeepSpeed's launcher: "exits with return code = -9"; torchrun: "failed
// (exitcode: -9)"), the host's OOM killer's usual mark. Each becomes a finding once.
//
// A stall: no output line and no new step for longer than the hang bound while the command runs:
// before the first step at least 300 s (imports, model build, JIT builds are often silent), after
// it --hang-after's, else max(60 s, 20 x the median time between steps), as `launch` derives it
// (docs/doctor.md).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::diagnosis {

struct OutputDoctorOptions {
  double hang_after_s = 0;           ///< > 0: this bound once a step was seen; 0: derived from the step times
  double min_hang_s = 60;            ///< the derived bound's floor
  double before_first_step_s = 300;  ///< the bound before any step (model build, weight load)
  std::string config_path;           ///< the run's DeepSpeed config, named in the OOM finding's fix
};

class OutputDoctor {
 public:
  explicit OutputDoctor(OutputDoctorOptions options = {});

  /// One line of the command's output, read at `now` (Unix seconds); a finding when it is news.
  std::optional<sessions::Finding> on_line(const std::string& line, double now);
  /// The highest step seen so far, at `now`: a new step restarts the stall clock.
  void on_steps(std::int64_t steps, double now);
  /// A stall finding the first time the command has been silent past the bound; when it speaks
  /// again, an info finding "stall_ended" saying how long it was silent (at a new step, or after a
  /// few seconds' grace in which no timeout or collective error explained the silence as a real
  /// hang); nullopt else. A later silence is news again.
  std::optional<sessions::Finding> check(double now);
  /// At the command's end: the "stall_ended" still in its grace, if any.
  std::optional<sessions::Finding> finish();
  /// The bound `check` applies now, in seconds.
  double hang_bound() const;
  /// Whether a finding of severity "error" came from the output (a run that failed before its
  /// first step then needs no second, vaguer finding).
  bool reported_error() const { return reported_error_; }

 private:
  void start(double now);  ///< the stall clock starts at the first call
  void activity(double now);
  std::optional<sessions::Finding> stall_ended();

  OutputDoctorOptions options_;
  bool started_ = false;
  double last_activity_ = 0;   ///< the last line or new step (or the first call)
  std::int64_t steps_ = 0;
  std::vector<double> step_times_;  ///< when each new step count was seen (the last 64)
  bool stalled_ = false;       ///< a stall was reported and nothing has happened since
  double stall_began_ = 0;     ///< the last activity before the reported stall
  std::int64_t stalled_at_step_ = 0;  ///< steps_ when the stall was reported
  std::optional<double> resumed_at_;  ///< activity after a reported stall, not yet said
  bool reported_error_ = false;       ///< see reported_error()
  std::set<std::string> seen_; ///< kind|rank|summary of the decoded findings already reported
};

}  // namespace shardscope::diagnosis
