#include "diagnosis/session_review.hpp"

#include <algorithm>

namespace shardscope::diagnosis {
namespace {

bool has_kind(const std::vector<sessions::Finding>& findings, const std::string& kind) {
  return std::any_of(findings.begin(), findings.end(), [&](const sessions::Finding& f) { return f.kind == kind; });
}

bool any_open(const std::vector<sessions::CollectiveMark>& marks) {
  return std::any_of(marks.begin(), marks.end(), [](const sessions::CollectiveMark& m) { return !m.left_at; });
}

}  // namespace

std::vector<sessions::Finding> review_session(const SessionMaterial& m) {
  std::vector<sessions::Finding> findings = m.stored;
  if (!has_kind(findings, "hang") && m.status != "completed" && any_open(m.marks))
    findings.push_back(diagnose_hang(m.marks, m.run));
  auto numerics = m.step_numerics.empty() ? find_numerics(m.steps) : find_numerics(m.step_numerics);
  for (auto& f : numerics)
    if (!has_kind(m.stored, f.kind)) findings.push_back(std::move(f));
  for (auto& f : find_stragglers(m.timers, m.run))
    if (!has_kind(m.stored, f.kind)) findings.push_back(std::move(f));
  for (auto& flag : flag_stragglers(m.timer_columns, m.run))
    if (!has_kind(m.stored, flag.finding.kind)) findings.push_back(std::move(flag.finding));
  return findings;
}

}  // namespace shardscope::diagnosis
