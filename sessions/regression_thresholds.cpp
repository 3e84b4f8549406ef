// Thresholds and the verdict rule of regression checks (docs/sessions.md, "Regression checks").
#include <cmath>
#include <cstdlib>

#include "sessions/errors.hpp"
#include "sessions/regression_check.hpp"
#include "sessions/regression_samples.hpp"

namespace shardscope::sessions {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string family_of(const std::string& metric) {
  const auto colon = metric.find(':');
  return colon == std::string::npos ? metric : metric.substr(0, colon + 1) + "*";
}

[[noreturn]] void bad_item(const std::string& item, const std::string& why) {
  throw SessionsError(ErrorKind::kInvalidArgument,
                      "--fail-on item '" + item + "': " + why +
                          " (write METRIC:+N% for metrics that get worse upwards, METRIC:-N% for throughput and mfu, "
                          "e.g. 'step_time:+3%,peak_memory:+2%,throughput:-3%')");
}

MetricThreshold parse_item(const std::string& item) {
  const auto colon = item.rfind(':');
  if (colon == std::string::npos || colon == 0) bad_item(item, "no ':' between metric and threshold");
  MetricThreshold t{trim(item.substr(0, colon)), 0};
  try {
    if (t.metric != "phase:*" && t.metric != "comm:*") metric_kind(t.metric);
  } catch (const SessionsError& e) {
    bad_item(item, e.what());
  }
  std::string amount = trim(item.substr(colon + 1));
  if (amount.empty() || amount.back() != '%') bad_item(item, "the threshold must be a percentage ending in '%'");
  amount.pop_back();
  const bool worse_up = higher_is_worse(t.metric);
  if (!amount.empty() && (amount[0] == '+' || amount[0] == '-')) {
    if ((amount[0] == '+') != worse_up)
      bad_item(item, std::string(t.metric) + " gets worse " + (worse_up ? "upwards: write +" : "downwards: write -") +
                         amount.substr(1) + "%");
    amount = amount.substr(1);
  }
  char* end = nullptr;
  const double percent = std::strtod(amount.c_str(), &end);
  if (amount.empty() || *end != '\0' || !std::isfinite(percent) || percent < 0)
    bad_item(item, "'" + amount + "' is not a percentage of 0 or more");
  t.fraction = percent / 100.0;
  return t;
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression: return "regression";
    case Verdict::kImprovement: return "improvement";
    case Verdict::kWithinThreshold: return "within_threshold";
    case Verdict::kWithinNoise: return "within_noise";
  }
  return "?";
}

const std::vector<MetricThreshold>& default_thresholds() {
  static const std::vector<MetricThreshold> defaults = {
      {"step_time", 0.03}, {"throughput", 0.03}, {"mfu", 0.03},   {"peak_memory", 0.02},
      {"reserved_memory", 0.05}, {"loss", 0.02}, {"phase:*", 0.05}, {"comm:*", 0.05}};
  return defaults;
}

bool gates_by_default(const std::string& metric) {
  return metric.rfind("phase:", 0) != 0 && metric.rfind("comm:", 0) != 0;
}

bool higher_is_worse(const std::string& metric) { return metric != "throughput" && metric != "mfu"; }

std::vector<MetricThreshold> parse_thresholds(const std::string& text) {
  std::vector<MetricThreshold> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto comma = text.find(',', begin);
    const std::string item = trim(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (!item.empty()) out.push_back(parse_item(item));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (out.empty()) bad_item(text, "no thresholds given");
  return out;
}

double threshold_for(const std::string& metric, const std::vector<MetricThreshold>& given) {
  for (const auto* list : {&given, &default_thresholds()}) {
    for (const auto& t : *list)
      if (t.metric == metric) return t.fraction;
    for (const auto& t : *list)
      if (t.metric == family_of(metric)) return t.fraction;
  }
  return 0.05;
}

Verdict decide(const Interval& change, double threshold, bool higher_worse) {
  // In the "worse is positive" frame, so one rule serves both directions.
  const double sign = higher_worse ? 1.0 : -1.0;
  const double estimate = sign * change.estimate;
  const double low = std::min(sign * change.low, sign * change.high);
  const double high = std::max(sign * change.low, sign * change.high);
  if (low > 0) return estimate > threshold ? Verdict::kRegression : Verdict::kWithinThreshold;
  if (high < 0) return -estimate > threshold ? Verdict::kImprovement : Verdict::kWithinThreshold;
  return Verdict::kWithinNoise;
}

}  // namespace shardscope::sessions
