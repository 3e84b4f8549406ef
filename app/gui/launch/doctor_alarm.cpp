#include "app/gui/launch/doctor_alarm.hpp"

#include <algorithm>
#include <map>

#include "app/gui/launch/launch_spec.hpp"
#include "sessions/doctor_records.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

constexpr const char* kLogScheme = "shardscope-log:";
constexpr const char* kCurveScheme = "shardscope-curve:";

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// A hang's collective: the oldest one some rank still waits in (no leave mark), as diagnose_hang
// reads it: every rank numbers a group's collectives alike, so its sequence names it on all ranks.
void add_open_collective(ss::Store& store, std::int64_t session_id, DoctorAlarm& alarm) {
  std::optional<ss::CollectiveMark> oldest;
  for (const auto& m : ss::load_collective_marks(store, session_id))
    if (!m.left_at && (!oldest || m.sequence < oldest->sequence)) oldest = m;
  if (!oldest) return;
  alarm.op = oldest->op;
  alarm.sequence = oldest->sequence;
  if (oldest->step > 0) alarm.step = oldest->step;
}

const ss::Finding* first_error(const std::vector<ss::Finding>& findings) {
  const ss::Finding* first = nullptr;
  for (const auto& f : findings)
    if (f.severity == "error" && (!first || (f.kind == "hang" && first->kind != "hang"))) first = &f;
  return first;
}

}  // namespace

std::optional<DoctorAlarm> read_doctor_alarm(ss::Store& store, std::int64_t session_id) {
  const auto findings = ss::load_findings(store, session_id);
  const ss::Finding* error = first_error(findings);
  if (!error) return std::nullopt;
  DoctorAlarm alarm;
  alarm.finding = *error;
  alarm.step = error->first_step;
  std::map<int, std::string> hosts;
  for (const auto& r : ss::load_session(store, session_id).ranks) hosts[r.info.rank] = r.info.host;
  for (int rank : error->ranks) alarm.culprits.push_back(rank_label(rank, hosts.count(rank) ? hosts[rank] : ""));
  if (!error->ranks.empty()) alarm.rank = error->ranks.front();
  if (error->kind == "hang") add_open_collective(store, session_id, alarm);
  return alarm;
}

std::string doctor_log_link(int rank) { return kLogScheme + std::to_string(rank); }

std::string doctor_curve_link(int rank, std::int64_t step) {
  return kCurveScheme + std::to_string(rank) + "@" + std::to_string(step);
}

bool parse_doctor_link(const std::string& link, bool& is_log, int& rank, std::int64_t& step) {
  try {
    is_log = link.rfind(kLogScheme, 0) == 0;
    if (is_log) {
      rank = std::stoi(link.substr(std::string(kLogScheme).size()));
      step = -1;
      return true;
    }
    if (link.rfind(kCurveScheme, 0) != 0) return false;
    const std::string rest = link.substr(std::string(kCurveScheme).size());
    const auto at = rest.find('@');
    rank = std::stoi(rest.substr(0, at));
    step = at == std::string::npos ? -1 : std::stoll(rest.substr(at + 1));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string doctor_banner_html(const DoctorAlarm& a) {
  std::string who;
  for (const auto& c : a.culprits) who += (who.empty() ? "" : ", ") + c;
  std::string head = "<b>The run doctor: " + escape_html(a.finding.kind) + "</b>";
  if (!who.empty()) head += " \u2014 culprit <b>" + escape_html(who) + "</b>";
  if (!a.op.empty()) head += ", in " + escape_html(a.op) + " #" + std::to_string(a.sequence);
  if (a.step >= 0) head += " at step " + std::to_string(a.step);
  std::string html = "<p>" + head + "</p><p>" + escape_html(a.finding.summary) + "</p>";
  if (!a.finding.suggested_fix.empty()) html += "<p><i>What to do:</i> " + escape_html(a.finding.suggested_fix) + "</p>";
  if (a.rank >= 0) {
    const std::string name = escape_html(a.culprits.front());
    html += "<p><a href='" + doctor_log_link(a.rank) + "'>" + name + "'s log</a> &nbsp;\u00b7&nbsp; <a href='" +
            doctor_curve_link(a.rank, a.step) + "'>" + name + "'s curves" +
            (a.step >= 0 ? " at step " + std::to_string(a.step) : std::string()) + "</a></p>";
  }
  return html;
}

}  // namespace shardscope::gui
