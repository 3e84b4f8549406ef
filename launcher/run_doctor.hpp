#pragma once
// The launcher's run doctor (docs/doctor.md): it sees every event the session's collector accepts
// (on the collector's network thread) and, on the launcher's own loop about once a second, turns
// what it saw into findings (diagnosis/): a hang when no step and no collective completed for
// --hang-after seconds, a straggler (and its recovery), a NaN/Inf loss, an fp16 overflow streak, a
// loss spike. Each finding is printed as `shardscope launch: doctor: ...` lines and
// stored in the session; with `--on-hang stop` a hang also ends the run.

#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/hang_watch.hpp"
#include "diagnosis/numerics_watch.hpp"
#include "diagnosis/straggler_watch.hpp"
#include "sessions/events.hpp"

namespace shardscope::launcher {

class LaunchSession;

enum class OnHang { kReport, kStop };

struct DoctorOptions {
  std::optional<double> hang_after_s;  ///< --hang-after; unset: max(60 s, 20 x the median step)
  OnHang on_hang = OnHang::kReport;
};

/// Parses --on-hang's value; throws LaunchError(kUsage) naming the flag and the accepted values.
OnHang parse_on_hang(const std::string& text);

class RunDoctor {
 public:
  RunDoctor(DoctorOptions options, double started_at);
  RunDoctor(const RunDoctor&) = delete;
  RunDoctor& operator=(const RunDoctor&) = delete;

  /// Takes in one event as it arrives (thread-safe: the collector calls it on its network thread).
  void observe(const sessions::Event& event);
  /// The findings made since the last call, at Unix time `now`.
  std::vector<sessions::Finding> check(double now);
  /// Checks, prints each new finding to `err` and sends it to `session` (when there is one), and
  /// returns why the run must stop ("" to go on): a hang under --on-hang stop.
  std::string tick(std::ostream& err, LaunchSession* session);

 private:
  DoctorOptions options_;
  std::mutex mutex_;
  diagnosis::HangWatch hang_;
  diagnosis::StragglerWatch stragglers_;
  diagnosis::NumericsWatch numerics_;
};

/// A finding as the launcher prints it: "doctor: SEVERITY KIND: summary", then the evidence and the
/// suggested fix, one line each.
std::vector<std::string> finding_lines(const sessions::Finding& finding);

}  // namespace shardscope::launcher
