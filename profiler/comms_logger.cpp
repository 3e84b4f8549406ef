#include "profiler/comms_logger.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace shardscope::profiler {
namespace {

std::string decimal_text(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// Python's "{:<20}".format(x): left-aligned in 20 columns (wider values are not cut).
std::string column(const std::string& text) {
  return text.size() >= 20 ? text : text + std::string(20 - text.size(), ' ');
}

}  // namespace

double trimmed_mean(std::vector<double> values, double proportion) {
  if (values.empty()) throw std::invalid_argument("trimmed_mean of no values");
  std::sort(values.begin(), values.end());
  const auto cut = static_cast<std::size_t>(proportion * static_cast<double>(values.size()));
  if (2 * cut >= values.size()) throw std::invalid_argument("trimmed_mean: proportion too large");
  const double sum = std::accumulate(values.begin() + static_cast<long>(cut), values.end() - static_cast<long>(cut), 0.0);
  return sum / static_cast<double>(values.size() - 2 * cut);
}

std::string convert_size(std::uint64_t bytes) {
  if (bytes == 0) return "0B";
  static const char* kNames[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  const int i = static_cast<int>(std::floor(std::log(static_cast<double>(bytes)) / std::log(1024.0)));
  const double p = std::pow(1024.0, i);
  // DeepSpeed: s = round(size_bytes / p, 2); "%s %s" % (s, size_name[i])
  const double s = std::round(static_cast<double>(bytes) / p * 100.0) / 100.0;
  std::ostringstream out;
  out << s;
  std::string number = out.str();
  if (number.find('.') == std::string::npos) number += ".0";  // Python prints floats with a point
  return number + " " + kNames[i];
}

bool CommsLogger::should_record(const std::string& op) const {
  if (!options_.enabled) return false;
  return options_.prof_all || std::find(options_.prof_ops.begin(), options_.prof_ops.end(), op) != options_.prof_ops.end();
}

std::string CommsLogger::record(const std::string& op, std::uint64_t message_bytes, int world_size,
                                double latency_ms, const std::string& caller) {
  const auto kind = collective_from_name(op);
  if (!kind) throw std::invalid_argument("comms logger: unknown collective '" + op + "'");
  if (!should_record(op)) return "";
  const Bandwidth bw = collective_bandwidth(*kind, message_bytes, world_size, latency_ms);
  const std::string name = options_.debug && !caller.empty() ? op + " | [Caller Func: " + caller + "]" : op;
  Samples& samples = records_[name][message_bytes];
  samples.latency_ms.push_back(latency_ms);
  samples.algbw.push_back(bw.algbw_gbps);
  samples.busbw.push_back(bw.busbw_gbps);
  if (!options_.verbose) return "";
  return "comm op: " + name + " | time (ms): " + decimal_text(latency_ms, 2) + " | msg size: " + convert_size(message_bytes) +
         " | algbw (Gbps): " + decimal_text(bw.algbw_gbps, 2) + " | busbw (Gbps): " + decimal_text(bw.busbw_gbps, 2);
}

std::vector<CommOpSummary> CommsLogger::summary() const {
  std::vector<CommOpSummary> ops;
  for (const auto& [name, sizes] : records_) {
    CommOpSummary op{name, {}};
    for (const auto& [bytes, s] : sizes) {  // std::map: sorted by message size
      const double total = std::accumulate(s.latency_ms.begin(), s.latency_ms.end(), 0.0);
      op.sizes.push_back({bytes, static_cast<std::int64_t>(s.latency_ms.size()), total,
                          trimmed_mean(s.latency_ms, 0.1), trimmed_mean(s.algbw, 0.1), trimmed_mean(s.busbw, 0.1)});
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

std::string CommsLogger::format_summary() const {
  std::ostringstream out;
  out << column("Comm. Op") << column("Message Size") << column("Count") << column("Total Latency(ms)")
      << column("Avg Latency(ms)") << column("tput_avg (Gbps)") << column("busbw_avg (Gbps)") << "\n";
  for (const auto& op : summary()) {
    out << op.name << "\n";
    for (const auto& s : op.sizes)
      out << column("") << column(convert_size(s.message_bytes)) << column(std::to_string(s.count))
          << column(decimal_text(s.total_latency_ms, 2)) << column(decimal_text(s.avg_latency_ms, 2))
          << column(decimal_text(s.algbw_gbps, 2)) << column(decimal_text(s.busbw_gbps, 2)) << "\n";
  }
  return out.str();
}

}  // namespace shardscope::profiler
