#pragma once
// What `shardscope bench io` prints (the nccl-tests-style table, or one JSON document) and the
// session it stores: adapters from aio's IoBenchResult, no measuring here.

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "aio/io_benchmark.hpp"

namespace shardscope::app {

class BenchIoPrinter {
 public:
  /// Prints the header now (table mode); rows as they come; the footer or the JSON at finish().
  BenchIoPrinter(const aio::IoBenchOptions& options, std::ostream& out, bool json);
  void row(const aio::IoBenchRow& row);
  void finish(const aio::IoBenchResult& result);

 private:
  const aio::IoBenchOptions& options_;
  std::ostream& out_;
  bool json_;
};

/// One table row as printed (also the session's log line for it).
std::string bench_io_row_text(const aio::IoBenchRow& row);
/// The result as the JSON document of --json (schema shardscope.bench_io/1).
nlohmann::json bench_io_json(const aio::IoBenchOptions& options, const aio::IoBenchResult& result);
/// Stores the run in the session database `db`: the config is the best aio block and the sweep,
/// each point a timer breakdown (write, read, fio_write, fio_read in ms) and a log line.
/// `started_at` is the Unix time the measuring began.
void store_bench_io_session(const std::string& db, const std::string& name, const aio::IoBenchOptions& options,
                            const aio::IoBenchResult& result, const std::vector<std::string>& args,
                            double started_at);

}  // namespace shardscope::app
