#include "launcher/run_doctor.hpp"

#include <chrono>
#include <ostream>
#include <sstream>

#include "launcher/launch_error.hpp"
#include "launcher/launch_session.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using sessions::unix_now;

diagnosis::HangWatchOptions hang_options(const DoctorOptions& o) {
  diagnosis::HangWatchOptions h;
  h.hang_after_s = o.hang_after_s;
  return h;
}

std::string upper(std::string text) {
  for (auto& c : text) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return text;
}

}  // namespace

OnHang parse_on_hang(const std::string& text) {
  if (text == "report") return OnHang::kReport;
  if (text == "stop") return OnHang::kStop;
  throw LaunchError(LaunchError::Kind::kUsage, "--on-hang must be `report` (say which rank hangs and keep "
                                               "waiting) or `stop` (then end every rank), got '" + text + "'");
}

RunDoctor::RunDoctor(DoctorOptions options, double started_at)
    : options_(options), hang_(hang_options(options), started_at) {}

void RunDoctor::observe(const sessions::Event& event) {
  // Only what the doctor reads: kernel batches and log lines pass by without taking the lock.
  const bool marks_or_steps =
      std::holds_alternative<sessions::CollectiveMark>(event) || std::holds_alternative<sessions::StepMetrics>(event);
  const bool run_facts = std::holds_alternative<sessions::RunStart>(event) || std::holds_alternative<sessions::HostReport>(event);
  const bool timers = std::holds_alternative<sessions::TimerBreakdown>(event);
  if (!marks_or_steps && !run_facts && !timers) return;
  const double now = unix_now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (marks_or_steps || run_facts) hang_.observe(event, now);
  if (timers || run_facts) stragglers_.observe(event);
  if (!timers) numerics_.observe(event);
}

std::vector<sessions::Finding> RunDoctor::check(double now) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<sessions::Finding> findings;
  if (auto hang = hang_.check(now)) findings.push_back(std::move(*hang));
  for (auto& f : numerics_.check(now)) findings.push_back(std::move(f));
  for (auto& f : stragglers_.check(now)) findings.push_back(std::move(f));
  return findings;
}

std::string RunDoctor::tick(std::ostream& err, LaunchSession* session) {
  std::string stop;
  for (const auto& f : check(unix_now())) {
    const auto level = f.severity == "error"     ? sessions::LogLevel::kError
                       : f.severity == "warning" ? sessions::LogLevel::kWarning
                                                 : sessions::LogLevel::kInfo;
    for (const auto& line : finding_lines(f)) {
      err << "shardscope launch: " << line << "\n";
      if (session) session->send(sessions::LogLine{-1, unix_now(), level, line});
    }
    err.flush();
    if (session) session->send(f);
    if (f.kind == "hang" && options_.on_hang == OnHang::kStop && stop.empty())
      stop = "the run hangs (" + f.summary + "); --on-hang stop: stopping every rank";
  }
  return stop;
}

std::vector<std::string> finding_lines(const sessions::Finding& f) {
  std::vector<std::string> lines{"doctor: " + upper(f.severity) + " " + f.kind + ": " + f.summary};
  std::istringstream evidence(f.evidence);
  for (std::string line; std::getline(evidence, line);)
    if (!line.empty()) lines.push_back("doctor:   " + line);
  if (!f.suggested_fix.empty()) lines.push_back("doctor:   what to do: " + f.suggested_fix);
  return lines;
}

}  // namespace shardscope::launcher
