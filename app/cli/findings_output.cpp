#include "app/cli/findings_output.hpp"

#include <algorithm>
#include <sstream>

#include "sessions/display_text.hpp"

namespace shardscope::app {
namespace {

using diagnosis::FindingChange;
using diagnosis::FindingRow;

std::string shown(const std::string& text) { return sessions::escape_control_characters(text); }

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text.empty() ? "-" : text;
}

std::string column_label(const FindingsColumn& c) { return "#" + std::to_string(c.id) + " " + shown(c.name); }

// "error, step 3 (new)", "(gone)", "" for a session that has none and had none.
std::string cell_text(const FindingRow& row, std::size_t s) {
  std::string text;
  if (const auto& f = row.cells[s]) {
    text = shown(f->severity);
    if (const auto steps = finding_steps(*f); !steps.empty()) text += ", " + steps;
  }
  const FindingChange change = row.changes[s];
  if (change == FindingChange::kNew || change == FindingChange::kKept)
    text += std::string(" (") + diagnosis::finding_change_name(change) + ")";
  if (change == FindingChange::kGone) text = "(gone)";
  return text;
}

// Characters a terminal shows (UTF-8 code points), so a non-ASCII name pads like one character.
std::size_t width_of(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

void print_rows(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], width_of(row[i]));
    }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < row.size(); ++i)
      line += " " + row[i] + (i + 1 < row.size() ? std::string(widths[i] - width_of(row[i]) + 1, ' ') : "");
    out << line << "\n";
  }
}

std::string counts_line(const std::vector<FindingRow>& rows, const std::vector<FindingsColumn>& columns) {
  std::string line;
  for (std::size_t s = 0; s < columns.size(); ++s) {
    const auto in = std::count_if(rows.begin(), rows.end(), [&](const FindingRow& r) { return r.cells[s].has_value(); });
    line += (s ? ", " : "") + std::to_string(in) + " in " + column_label(columns[s]);
  }
  for (std::size_t s = 1; s < columns.size(); ++s) {
    const auto count = [&](FindingChange c) {
      return std::to_string(std::count_if(rows.begin(), rows.end(), [&](const FindingRow& r) { return r.changes[s] == c; }));
    };
    line += "; #" + std::to_string(columns[s].id) + " against #" + std::to_string(columns[0].id) + ": " +
            count(FindingChange::kNew) + " new, " + count(FindingChange::kGone) + " gone, " +
            count(FindingChange::kKept) + " kept";
  }
  return line;
}

}  // namespace

nlohmann::json finding_json(const sessions::Finding& f) {
  return {{"kind", f.kind},       {"severity", f.severity}, {"first_step", f.first_step},
          {"last_step", f.last_step}, {"ranks", f.ranks},   {"summary", f.summary},
          {"evidence", f.evidence},   {"suggested_fix", f.suggested_fix}};
}

std::string finding_steps(const sessions::Finding& f) {
  if (f.first_step < 0) return "";
  return f.first_step == f.last_step ? "step " + std::to_string(f.first_step)
                                     : "steps " + std::to_string(f.first_step) + "-" + std::to_string(f.last_step);
}

void print_finding(std::ostream& out, const sessions::Finding& f, const std::string& indent) {
  const auto steps = finding_steps(f);
  out << indent << "[" << shown(f.severity) << "] " << shown(f.kind) << (steps.empty() ? "" : ", " + steps) << ": "
      << shown(f.summary) << "\n";
  std::istringstream evidence(f.evidence);
  for (std::string line; std::getline(evidence, line);) out << indent << "    " << shown(line) << "\n";
  if (!f.suggested_fix.empty()) out << indent << "  fix: " << shown(f.suggested_fix) << "\n";
}

void print_findings_comparison(std::ostream& out, const std::vector<FindingRow>& rows,
                               const std::vector<FindingsColumn>& columns) {
  out << "\nfindings: " << counts_line(rows, columns) << "\n";
  if (rows.empty()) return;
  std::vector<std::vector<std::string>> table{{"kind", "ranks"}};
  for (const auto& c : columns) table[0].push_back(column_label(c));
  for (const auto& row : rows) {
    std::vector<std::string> line{shown(row.kind), ranks_text(row.ranks)};
    for (std::size_t s = 0; s < columns.size(); ++s) line.push_back(cell_text(row, s));
    table.push_back(line);
  }
  print_rows(out, table);
  for (std::size_t s = 0; s < columns.size(); ++s)
    for (const auto& row : rows)
      if (const auto& f = row.cells[s])
        out << "  " << column_label(columns[s]) << ": " << shown(f->kind) << " [" << ranks_text(row.ranks) << "]"
            << (s && row.changes[s] == FindingChange::kNew ? " (new)" : "") << ": " << shown(f->summary) << "\n";
}

nlohmann::json findings_comparison_json(const std::vector<FindingRow>& rows, const std::vector<FindingsColumn>& columns) {
  nlohmann::json sessions = nlohmann::json::array(), out_rows = nlohmann::json::array();
  for (std::size_t s = 0; s < columns.size(); ++s) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& row : rows)
      if (row.cells[s]) findings.push_back(finding_json(*row.cells[s]));
    sessions.push_back({{"id", columns[s].id}, {"name", columns[s].name}, {"findings", findings}});
  }
  for (const auto& row : rows) {
    nlohmann::json cells = nlohmann::json::array();
    for (std::size_t s = 0; s < columns.size(); ++s)
      cells.push_back({{"change", diagnosis::finding_change_name(row.changes[s])},
                       {"finding", row.cells[s] ? finding_json(*row.cells[s]) : nlohmann::json()}});
    out_rows.push_back({{"kind", row.kind}, {"ranks", row.ranks}, {"ordinal", row.ordinal}, {"cells", cells}});
  }
  return {{"baseline", columns.empty() ? 0 : columns[0].id}, {"sessions", sessions}, {"rows", out_rows}};
}

}  // namespace shardscope::app
