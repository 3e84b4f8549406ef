#include "diagnosis/numerics_watch.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace shardscope::diagnosis {

double min_loss_scale_of(const std::string& config_json, double fallback) {
  const auto config = nlohmann::json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return fallback;
  const auto fp16 = config.find("fp16");
  if (fp16 == config.end() || !fp16->is_object()) return fallback;
  const auto min = fp16->find("min_loss_scale");
  return min != fp16->end() && min->is_number() ? min->get<double>() : fallback;
}

NumericsWatch::NumericsWatch(NumericsOptions options, std::size_t history) : options_(options), history_(history) {}

void NumericsWatch::observe(const sessions::Event& event) {
  if (const auto* s = std::get_if<sessions::StepMetrics>(&event)) {
    auto& ranks = steps_[s->step];
    // A rank reports a step once; a resumed run repeating a step replaces it.
    auto same = std::find_if(ranks.begin(), ranks.end(), [&](const auto& r) { return r.rank == s->rank; });
    if (same != ranks.end()) *same = *s;
    else ranks.push_back(*s);
    while (steps_.size() > history_) steps_.erase(steps_.begin());
    changed_ = true;
  } else if (const auto* r = std::get_if<sessions::RunStart>(&event)) {
    options_.min_loss_scale = min_loss_scale_of(r->config_json, options_.min_loss_scale);
  }
}

// A finding is new unless one of its kind was reported for the same stretch of steps (the stretch
// has grown since), except that an overflow streak reaching the minimum scale is news again.
bool NumericsWatch::is_new(const sessions::Finding& f) {
  auto& earlier = reported_[f.kind];
  for (auto& e : earlier) {
    if (f.first_step > e.last_step + 1 || f.last_step < e.first_step) continue;
    const bool escalated = f.severity == "error" && e.severity != "error";
    e.last_step = std::max(e.last_step, f.last_step);
    if (!escalated) return false;
    e.severity = f.severity;
    return true;
  }
  earlier.push_back(f);
  return true;
}

std::vector<sessions::Finding> NumericsWatch::check(double now) {
  std::vector<sessions::Finding> out;
  if (!changed_) return out;
  changed_ = false;
  std::vector<sessions::StepMetrics> steps;
  for (const auto& [step, ranks] : steps_) steps.insert(steps.end(), ranks.begin(), ranks.end());
  for (auto& f : find_numerics(steps, options_))
    if (is_new(f)) {
      f.found_at = now;
      out.push_back(std::move(f));
    }
  return out;
}

}  // namespace shardscope::diagnosis
