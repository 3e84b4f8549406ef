#include "sessions/session_json.hpp"

#include <nlohmann/json.hpp>

namespace shardscope::sessions {

std::string lenient_json_text(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json optional_vector(const std::vector<std::optional<double>>& values) {
  json out = json::array();
  for (const auto& v : values) out.push_back(opt(v));
  return out;
}

json diff_rows(const std::vector<DiffRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    json values = json::array();
    for (const auto& v : r.values) values.push_back(opt(v));
    out.push_back({{"path", r.path}, {"values", values}, {"differs", r.differs}});
  }
  return out;
}

}  // namespace

json session_info_to_json(const SessionInfo& i) {
  return {{"id", i.id},
          {"uid", i.uid},
          {"name", i.name},
          {"status", i.status},
          {"started_at", opt(i.started_at)},
          {"ended_at", opt(i.ended_at)},
          {"wall_time_s", opt(i.wall_time_s)},
          {"world_size", i.world_size},
          {"config_hash", i.config_hash},
          {"shardscope_version", i.shardscope_version},
          {"git_hash", i.git_hash},
          {"hosts", i.hosts},
          {"tags", i.tags},
          {"first_step", opt(i.first_step)},
          {"last_step", opt(i.last_step)},
          {"origin", i.origin.empty() ? json(nullptr) : json(i.origin)}};
}

json session_detail_to_json(const SessionDetail& d) {
  json out = session_info_to_json(d.info);
  out["command_line"] = d.command_line;
  out["config"] = d.config_json.empty() ? json(nullptr) : json::parse(d.config_json, nullptr, false);
  out["environment"] = d.environment ? report_to_json(*d.environment) : json(nullptr);
  out["peak_tflops_per_gpu"] = opt(d.peak_tflops_per_gpu);
  out["origin_details"] = d.origin_json.empty() ? json(nullptr) : json::parse(d.origin_json, nullptr, false);
  json ranks = json::array();
  for (const auto& r : d.ranks)
    ranks.push_back({{"rank", r.info.rank},
                     {"local_rank", r.info.local_rank},
                     {"host", r.info.host},
                     {"pid", r.info.pid},
                     {"device", r.info.device},
                     {"exit_code", opt(r.exit_code)}});
  out["ranks"] = ranks;
  json hosts = json::array();
  for (const auto& h : d.hosts)
    hosts.push_back({{"host", h.host},
                     {"node_rank", opt(h.node_rank)},
                     {"ranks", h.ranks},
                     {"clock_offset_s", opt(h.clock_offset_s)},
                     {"clock_uncertainty_s", opt(h.clock_uncertainty_s)},
                     {"shardscope_version", h.shardscope_version},
                     {"git_hash", h.git_hash}});
  out["hosts"] = hosts;
  json variables = json::object();
  for (const auto& [name, value] : d.environment_variables) variables[name] = value;
  out["environment_variables"] = variables;
  return out;
}

json session_summary_to_json(const SessionSummary& s) {
  json memory = json::array();
  for (const auto& m : s.memory)
    memory.push_back({{"rank", m.rank}, {"peak_bytes", opt(m.peak_bytes)}, {"reserved_bytes", opt(m.reserved_bytes)}});
  json timers = json::array();
  for (const auto& t : s.timers)
    timers.push_back({{"name", t.name}, {"median_ms", t.median_ms}, {"p90_ms", t.p90_ms}, {"total_s", t.total_s}});
  json comms = json::array();
  for (const auto& c : s.comm_ops)
    comms.push_back({{"op", c.op},
                     {"count", c.count},
                     {"total_bytes", c.total_bytes},
                     {"total_latency_s", c.total_latency_s},
                     {"mean_algbw_gbps", c.mean_algbw_gbps},
                     {"mean_busbw_gbps", c.mean_busbw_gbps}});
  return {{"session", session_info_to_json(s.info)},
          {"steps", s.steps},
          {"timed_steps", s.timed_steps},
          {"median_step_ms", opt(s.median_step_ms)},
          {"p90_step_ms", opt(s.p90_step_ms)},
          {"samples_per_s", opt(s.samples_per_s)},
          {"tokens_per_s", opt(s.tokens_per_s)},
          {"tflops_per_gpu", opt(s.tflops_per_gpu)},
          {"mfu", opt(s.mfu)},
          {"memory", memory},
          {"final_loss", opt(s.final_loss)},
          {"final_loss_step", opt(s.final_loss_step)},
          {"best_loss", opt(s.best_loss)},
          {"best_loss_step", opt(s.best_loss_step)},
          {"skipped_steps", s.skipped_steps},
          {"comm_time_s", opt(s.comm_time_s)},
          {"comm_fraction", opt(s.comm_fraction)},
          {"timers", timers},
          {"comm_ops", comms},
          {"activity_records", s.activity_records},
          {"nvtx_ranges", s.nvtx_ranges},
          {"warning_logs", s.warning_logs},
          {"error_logs", s.error_logs}};
}

json comparison_to_json(const SessionComparison& c, bool include_curves) {
  json sessions = json::array();
  for (const auto& s : c.sessions) sessions.push_back(session_summary_to_json(s));
  json summary = json::array();
  for (const auto& d : c.summary)
    summary.push_back({{"field", d.field},
                       {"lower_is_better", d.lower_is_better},
                       {"values", optional_vector(d.values)},
                       {"delta", optional_vector(d.delta)},
                       {"delta_percent", optional_vector(d.delta_percent)}});
  json out = {{"sessions", sessions},
              {"summary", summary},
              {"config_diff", diff_rows(c.config_diff)},
              {"environment_diff", diff_rows(c.environment_diff)},
              {"run_diff", diff_rows(c.run_diff)}};
  json release = json::array();
  for (const auto& r : c.deepspeed_release) {
    json values = json::array();
    for (const auto& v : r.values) values.push_back(v ? json(*v) : json(nullptr));
    release.push_back({{"path", r.path}, {"values", values}, {"note", r.note}});
  }
  out["deepspeed_release"] = release;
  if (include_curves) {
    json curves = json::array();
    for (const auto& curve : c.curves) {
      json values = json::array(), smoothed = json::array();
      for (const auto& v : curve.values) values.push_back(optional_vector(v));
      for (const auto& v : curve.smoothed) smoothed.push_back(optional_vector(v));
      curves.push_back({{"metric", curve.metric}, {"steps", curve.steps}, {"values", values}, {"smoothed", smoothed}});
    }
    out["curves"] = curves;
  }
  return out;
}

}  // namespace shardscope::sessions
