#include "diagnosis/numerics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "diagnosis/robust_stats.hpp"

namespace shardscope::diagnosis {
namespace {

using sessions::Finding;
using sessions::StepMetrics;

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

// The first non-finite loss and how long it lasted.
void add_nonfinite(const std::vector<StepNumerics>& views, std::vector<Finding>& out) {
  const auto first = std::find_if(views.begin(), views.end(), [](const StepNumerics& v) { return !v.nonfinite_ranks.empty(); });
  if (first == views.end()) return;
  auto last = first;
  for (auto it = first; it != views.end() && !it->nonfinite_ranks.empty(); ++it) last = it;
  Finding f;
  f.kind = first->any_inf_only ? "inf_loss" : "nan_loss";
  f.severity = "error";
  f.first_step = first->step;
  f.last_step = last->step;
  f.ranks = first->nonfinite_ranks;
  f.summary = std::string(first->any_inf_only ? "Inf" : "NaN") + " loss from step " + std::to_string(first->step) +
              " on rank(s) " + ranks_text(first->nonfinite_ranks) + " (through step " + std::to_string(last->step) + ")";
  std::ostringstream evidence;
  for (auto it = first - std::min<std::ptrdiff_t>(3, first - views.begin()); it != first; ++it)
    if (it->mean_loss) evidence << "step " << it->step << ": loss " << number(*it->mean_loss) << "\n";
  evidence << "step " << first->step << ": non-finite loss on rank(s) " << ranks_text(first->nonfinite_ranks) << "\n";
  f.evidence = evidence.str();
  f.suggested_fix = "Look at the batch of step " + std::to_string(first->step) +
                    " on those ranks; lower the learning rate or lengthen its warmup, set gradient_clipping, or train "
                    "in bf16 (fp16's range overflows where bf16's does not).";
  out.push_back(std::move(f));
}

Finding overflow_finding(const std::vector<StepNumerics>& views, std::size_t begin, std::size_t end,
                         const NumericsOptions& o) {
  Finding f;
  f.kind = "overflow_streak";
  f.first_step = views[begin].step;
  f.last_step = views[end - 1].step;
  const auto scale_before = begin > 0 ? views[begin - 1].loss_scale : views[begin].loss_scale;
  const auto scale_after = views[end - 1].loss_scale;
  const bool at_minimum = scale_after && *scale_after <= o.min_loss_scale;
  f.severity = at_minimum ? "error" : "warning";
  f.summary = "fp16 overflow on " + std::to_string(end - begin) + " consecutive steps (" + std::to_string(f.first_step) +
              "-" + std::to_string(f.last_step) + ")" +
              (at_minimum ? ": the loss scale collapsed to its minimum " + number(o.min_loss_scale) : "");
  std::ostringstream evidence;
  evidence << "skipped steps " << f.first_step << " to " << f.last_step << "\n";
  if (scale_before && scale_after) evidence << "loss scale " << number(*scale_before) << " -> " << number(*scale_after) << "\n";
  f.evidence = evidence.str();
  f.suggested_fix = at_minimum ? "The gradients overflow at any scale: train in bf16, lower the learning rate, or "
                                 "set gradient_clipping; check the data of step " + std::to_string(f.first_step) + "."
                               : "Raise fp16.initial_scale_power less, or lower the learning rate; a streak that "
                                 "reaches min_loss_scale means the gradients are not finite at any scale.";
  return f;
}

void add_overflow_streaks(const std::vector<StepNumerics>& views, const NumericsOptions& o, std::vector<Finding>& out) {
  std::size_t i = 0;
  while (i < views.size()) {
    if (!views[i].skipped) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < views.size() && views[j].skipped) ++j;
    if (static_cast<int>(j - i) >= o.overflow_streak) out.push_back(overflow_finding(views, i, j, o));
    i = j;
  }
}

void add_spikes(const std::vector<StepNumerics>& views, const NumericsOptions& o, std::vector<Finding>& out) {
  std::vector<double> history;  // finite mean losses before the step, newest last
  Finding* open = nullptr;      // the spike being extended over consecutive steps
  for (const auto& v : views) {
    if (!v.mean_loss) continue;
    const double x = *v.mean_loss;
    if (static_cast<int>(history.size()) >= o.spike_min_history) {
      std::vector<double> window(history.end() - std::min<std::ptrdiff_t>(o.spike_window, static_cast<std::ptrdiff_t>(history.size())),
                                 history.end());
      const double m = median(window);
      const double spread = std::max({scaled_mad(window), 1e-3 * std::fabs(m), 1e-12});
      const double z = (x - m) / spread;
      if (z > o.spike_z) {
        if (open && open->last_step + 1 >= v.step) {
          open->last_step = v.step;
        } else {
          Finding f;
          f.kind = "loss_spike";
          f.severity = "warning";
          f.first_step = f.last_step = v.step;
          f.summary = "loss spike at step " + std::to_string(v.step) + ": " + number(x) + " against a median of " +
                      number(m) + " over the previous " + std::to_string(window.size()) + " steps (robust z " +
                      number(z) + ")";
          f.evidence = "median " + number(m) + ", scaled MAD " + number(spread) + ", loss " + number(x) + "\n";
          f.suggested_fix = "Look at the batch of step " + std::to_string(v.step) +
                            " (bad or duplicated data); a spike after a warmup ends suggests a lower peak learning "
                            "rate; gradient_clipping bounds the damage of one bad batch.";
          out.push_back(std::move(f));
          open = &out.back();
        }
        continue;  // a spike does not join the history it is measured against
      }
    }
    open = nullptr;
    history.push_back(x);
  }
}

}  // namespace

// A step's finite losses are summed in the order of `steps`.
std::vector<StepNumerics> step_numerics(const std::vector<StepMetrics>& steps) {
  std::map<std::int64_t, std::vector<const StepMetrics*>> grouped;
  for (const auto& s : steps) grouped[s.step].push_back(&s);
  std::vector<StepNumerics> views;
  for (const auto& [step, ranks] : grouped) {
    StepNumerics v;
    v.step = step;
    double sum = 0;
    int finite = 0;
    for (const auto* s : ranks) {
      v.skipped = v.skipped || s->skipped;
      if (s->loss_scale) v.loss_scale = v.loss_scale ? std::min(*v.loss_scale, *s->loss_scale) : *s->loss_scale;
      if (!s->loss) continue;
      if (std::isfinite(*s->loss)) {
        sum += *s->loss;
        ++finite;
      } else {
        v.nonfinite_ranks.push_back(s->rank);
        v.any_inf_only = v.any_inf_only && std::isinf(*s->loss);
      }
    }
    if (finite) v.mean_loss = sum / finite;
    std::sort(v.nonfinite_ranks.begin(), v.nonfinite_ranks.end());
    views.push_back(std::move(v));
  }
  return views;
}


std::vector<Finding> find_numerics(const std::vector<StepMetrics>& steps, const NumericsOptions& options) {
  return find_numerics(step_numerics(steps), options);
}

std::vector<Finding> find_numerics(const std::vector<StepNumerics>& views, const NumericsOptions& options) {
  std::vector<Finding> findings;
  add_nonfinite(views, findings);
  add_overflow_streaks(views, options, findings);
  std::vector<Finding> spikes;
  add_spikes(views, options, spikes);
  findings.insert(findings.end(), spikes.begin(), spikes.end());
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.first_step < b.first_step; });
  return findings;
}

}  // namespace shardscope::diagnosis
