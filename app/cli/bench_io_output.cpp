#include "app/cli/bench_io_output.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "aio/io_error.hpp"
#include "profiler/environment_probe.hpp"
#include "sessions/build_info.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/host_probe.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::app {
namespace {

using Json = nlohmann::json;

using sessions::unix_now;

std::string block_text(std::int64_t bytes) {
  char text[32];
  if (bytes % (1 << 20) == 0)
    std::snprintf(text, sizeof text, "%lldM", static_cast<long long>(bytes >> 20));
  else if (bytes % 1024 == 0)
    std::snprintf(text, sizeof text, "%lldK", static_cast<long long>(bytes >> 10));
  else
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(bytes));
  return text;
}

std::string number(double value, bool present) {
  if (!present) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

Json row_json(const aio::IoBenchRow& row) {
  const auto& s = row.ours.settings;
  Json j{{"backend", aio::io_backend_name(s.backend)}, {"block_size", s.block_size}, {"queue_depth", s.queue_depth},
         {"threads", s.intra_op_parallelism}, {"single_submit", s.single_submit}, {"overlap_events", s.overlap_events},
         {"write_gbps", row.ours.write_gbps}, {"read_gbps", row.ours.read_gbps}};
  if (row.fio) {
    j["fio_write_gbps"] = row.fio->write_gbps;
    j["fio_read_gbps"] = row.fio->read_gbps;
    j["write_ratio"] = row.write_ratio();
    j["read_ratio"] = row.read_ratio();
  }
  return j;
}

std::string verdict_text(const aio::IoBenchOptions& o, const aio::IoBenchResult& r) {
  const auto& best = r.rows[r.best];
  char text[256];
  if (!best.fio) return "# OK: fio not run (--fio off), no ratio to check";
  std::snprintf(text, sizeof text, "# %s: the best point writes at %.2fx and reads at %.2fx fio's throughput (threshold %.2fx)",
                r.ok ? "OK" : "FAILED", best.write_ratio(), best.read_ratio(), o.min_ratio);
  return text;
}

}  // namespace

std::string bench_io_row_text(const aio::IoBenchRow& row) {
  const auto& s = row.ours.settings;
  char text[256];
  std::snprintf(text, sizeof text, "  %8s %6s %5d %7d %7s %8s %8s %8s %9s %9s %7s %7s", aio::io_backend_name(s.backend),
                block_text(s.block_size).c_str(), s.queue_depth, s.intra_op_parallelism,
                s.single_submit ? "single" : "batch", s.overlap_events ? "overlap" : "batched",
                number(row.ours.write_gbps, true).c_str(), number(row.ours.read_gbps, true).c_str(),
                number(row.fio ? row.fio->write_gbps : 0, row.fio.has_value()).c_str(),
                number(row.fio ? row.fio->read_gbps : 0, row.fio.has_value()).c_str(),
                number(row.write_ratio(), row.fio.has_value()).c_str(), number(row.read_ratio(), row.fio.has_value()).c_str());
  return text;
}

BenchIoPrinter::BenchIoPrinter(const aio::IoBenchOptions& options, std::ostream& out, bool json)
    : options_(options), out_(out), json_(json) {
  if (json_) return;
  out_ << "# shardscope bench io: " << aio::format_bytes(static_cast<double>(options_.sweep.io_size))
       << " per transfer in " << options_.sweep.folder << ", " << options_.sweep.loops << " loop(s) per point"
       << (options_.fio == aio::FioMode::kOff ? ", fio off" : ", fio " + options_.fio_path) << "\n#\n";
  char header[256];
  std::snprintf(header, sizeof header, "# %8s %6s %5s %7s %7s %8s %8s %8s %9s %9s %7s %7s\n", "backend", "block", "qd",
                "threads", "submit", "events", "write", "read", "fio write", "fio read", "write", "read");
  out_ << header;
  std::snprintf(header, sizeof header, "# %8s %6s %5s %7s %7s %8s %8s %8s %9s %9s %7s %7s\n", "", "(B)", "", "", "", "",
                "(GB/s)", "(GB/s)", "(GB/s)", "(GB/s)", "(x fio)", "(x fio)");
  out_ << header << std::flush;
}

void BenchIoPrinter::row(const aio::IoBenchRow& row) {
  if (!json_) out_ << bench_io_row_text(row) << std::endl;
}

void BenchIoPrinter::finish(const aio::IoBenchResult& result) {
  if (json_) {
    out_ << bench_io_json(options_, result).dump(2) << "\n";
    return;
  }
  const auto& best = result.rows[result.best];
  if (options_.fio == aio::FioMode::kBest) out_ << "# fio at the best point:\n" << bench_io_row_text(best) << "\n";
  const auto& s = best.ours.settings;
  char text[256];
  std::snprintf(text, sizeof text, "# Best (highest read + write, as ds_nvme_tune): %s, block %s, queue depth %d, %d thread(s)\n",
                aio::io_backend_name(s.backend), block_text(s.block_size).c_str(), s.queue_depth, s.intra_op_parallelism);
  out_ << "#\n" << text;
  out_ << "# " << (result.direct_io ? "O_DIRECT" : "page cache (no O_DIRECT on this file system)") << " on "
       << result.filesystem << "; paste into the DeepSpeed config:\n";
  out_ << aio::aio_block_json(s) << "\n";
  const auto& b = sessions::build_info();
  out_ << "# shardscope " << b.version << " (git " << b.git_hash << "), host " << sessions::probe_host().hostname << "\n";
  out_ << verdict_text(options_, result) << "\n";
}

Json bench_io_json(const aio::IoBenchOptions& o, const aio::IoBenchResult& r) {
  Json rows = Json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  const auto& b = sessions::build_info();
  return {{"schema", "shardscope.bench_io/1"},
          {"path", o.sweep.folder},
          {"filesystem", r.filesystem},
          {"direct_io", r.direct_io},
          {"io_size", o.sweep.io_size},
          {"loops", o.sweep.loops},
          {"fio", o.fio == aio::FioMode::kEach ? "each" : o.fio == aio::FioMode::kBest ? "best" : "off"},
          {"min_ratio", o.min_ratio},
          {"rows", rows},
          {"best", row_json(r.rows[r.best])},
          {"aio", Json::parse(aio::aio_block_json(r.rows[r.best].ours.settings))["aio"]},
          {"ok", r.ok},
          {"shardscope", b.version},
          {"git", b.git_hash},
          {"host", sessions::probe_host().hostname}};
}

void store_bench_io_session(const std::string& db, const std::string& name, const aio::IoBenchOptions& options,
                            const aio::IoBenchResult& result, const std::vector<std::string>& args,
                            double started_at) {
  sessions::FileEventSink sink({db, sessions::new_session_uid()});
  const Json doc = bench_io_json(options, result);
  sessions::RunStart start;
  start.name = name;
  start.started_at = started_at;
  start.command_line = {"shardscope", "bench", "io"};
  start.command_line.insert(start.command_line.end(), args.begin(), args.end());
  start.config_json = Json{{"aio", doc["aio"]},
                           {"bench_io", {{"path", doc["path"]}, {"io_size", doc["io_size"]}, {"fio", doc["fio"]}}}}
                          .dump();
  start.environment = profiler::collect_environment_report();
  start.world_size = 1;
  start.ranks.push_back({0, 0, start.environment.host.hostname, static_cast<std::int64_t>(::getpid()), "cpu"});
  start.tags = {"bench", "bench-io"};
  sink.send(start);
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    const auto& row = result.rows[i];
    sessions::TimerBreakdown timers{0, static_cast<std::int64_t>(i + 1), {}};
    timers.timers.push_back({"write", row.ours.write_seconds * 1000.0});
    timers.timers.push_back({"read", row.ours.read_seconds * 1000.0});
    if (row.fio) {
      const double bytes = static_cast<double>(options.sweep.io_size);
      timers.timers.push_back({"fio_write", bytes / (row.fio->write_gbps * 1e9) * 1000.0});
      timers.timers.push_back({"fio_read", bytes / (row.fio->read_gbps * 1e9) * 1000.0});
    }
    sink.send(timers);
    sink.send(sessions::LogLine{0, unix_now(), sessions::LogLevel::kInfo, bench_io_row_text(row)});
  }
  sink.send(sessions::LogLine{0, unix_now(), sessions::LogLevel::kInfo, doc.dump()});
  const double ended = unix_now();
  sink.send(sessions::RunEnd{result.ok ? "completed" : "failed", ended, ended - started_at, {{0, result.ok ? 0 : 1}}});
  sink.close();
}

}  // namespace shardscope::app
