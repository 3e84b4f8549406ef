// shardscope bench io: the counterpart of DeepSpeed's ds_io / ds_nvme_tune. Measures O_DIRECT
// write and read GB/s through the aio layer over a sweep of block size, queue depth and threads,
// measures fio on the same folder with the same block size, depth and jobs, prints our throughput
// as a ratio of fio's (nccl-tests style: fixed columns, an OK/FAILED footer, --json), the best
// point as a paste-ready "aio" block, and stores the run as a session (--db).
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "aio/backend_probe.hpp"
#include "aio/io_benchmark.hpp"
#include "app/cli/arg_parser.hpp"
#include "app/cli/bench_io_output.hpp"
#include "app/cli/commands.hpp"
#include "configs/display_text.hpp"

namespace shardscope::app {
namespace {

// DeepSpeed's ds_io sizes: "400M" (2^20), "8K", "1G", or plain bytes.
std::int64_t parse_io_size(const std::string& flag, const std::string& text) {
  std::int64_t unit = 1;
  std::string digits = text;
  if (!text.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (last == 'K' || last == 'M' || last == 'G') {
      unit = last == 'K' ? 1024 : last == 'M' ? 1024 * 1024 : 1024LL * 1024 * 1024;
      digits = text.substr(0, text.size() - 1);
    }
  }
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(digits, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != digits.size() || value <= 0)
    throw UsageError("--" + flag + " '" + text + "' is not a positive size such as 400M, 8M, 1G or 1048576");
  return value * unit;
}

template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse) {
  std::vector<T> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) throw UsageError("--" + flag + " '" + text + "' has an empty item; write e.g. 1M,8M");
    out.push_back(parse(item));
  }
  if (out.empty()) throw UsageError("--" + flag + " needs at least one value");
  return out;
}

std::vector<bool> parse_switch(const std::string& flag, const std::string& text) {
  if (text == "on") return {true};
  if (text == "off") return {false};
  if (text == "both") return {false, true};
  throw UsageError("--" + flag + " '" + text + "' is not on, off or both");
}

ArgParser bench_parser() {
  ArgParser parser("bench io",
                   "Measures O_DIRECT write and read GB/s of the aio layer in DIR over a sweep of block size,\n"
                   "queue depth and threads (DeepSpeed's ds_io / ds_nvme_tune), runs fio on the same folder with\n"
                   "the same block size, depth and jobs, prints our GB/s as a ratio of fio's, and the best point\n"
                   "(highest read + write) as the \"aio\" block to paste into a DeepSpeed config.\n"
                   "Exit code 0 when the best point reaches --min-ratio of fio for read and write; 1 below it\n"
                   "or when I/O fails; 2 for bad flags.");
  parser.option("path", "DIR", "folder on the disk under test (the nvme_path of the config); required");
  parser.option("size", "BYTES", "bytes per transfer, as ds_io's --io_size: 400M (default), 64M, 1G");
  parser.option("block-sizes", "LIST", "aio block_size values, comma-separated (default 1M,8M)");
  parser.option("queue-depths", "LIST", "aio queue_depth values (default 32,128)");
  parser.option("threads", "LIST", "aio intra_op_parallelism values (default 1,2,4,8)");
  parser.option("single-submit", "on|off|both", "aio single_submit (default off)");
  parser.option("overlap-events", "on|off|both", "aio overlap_events (default on)");
  parser.option("backend", "libaio|io_uring|all", "kernel interface (default libaio, as DeepSpeed)");
  parser.option("loops", "N", "transfers per point, averaged (default 1)");
  parser.option("fio", "each|best|off", "points fio measures too (default each)");
  parser.option("min-ratio", "X", "the best point's read and write must reach X times fio's (default 0.9)");
  parser.option("db", "FILE", "store the run as a session in this session database");
  parser.option("name", "NAME", "the session's name (default \"bench io <DIR>\")");
  parser.flag("json", "print one JSON document (schema shardscope.bench_io/1) instead of the table");
  parser.option("json-out", "FILE", "also write that JSON document to FILE (the table still prints)");
  return parser;
}

aio::IoBenchOptions options_from(const ParsedArgs& a) {
  aio::IoBenchOptions o;
  const auto path = a.value("path");
  if (!path) throw UsageError("bench io needs --path DIR: the folder on the disk to measure");
  o.sweep.folder = *path;
  if (auto v = a.value("size")) o.sweep.io_size = parse_io_size("size", *v);
  const auto size_item = [](const std::string& t) { return parse_io_size("block-sizes", t); };
  if (auto v = a.value("block-sizes")) o.sweep.block_sizes = parse_list<std::int64_t>("block-sizes", *v, size_item);
  const auto positive = [](const std::string& flag) {
    return [flag](const std::string& t) {
      std::size_t used = 0;
      int n = 0;
      try {
        n = std::stoi(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != t.size() || n < 1) throw UsageError("--" + flag + " item '" + t + "' is not a positive integer");
      return n;
    };
  };
  if (auto v = a.value("queue-depths")) o.sweep.queue_depths = parse_list<int>("queue-depths", *v, positive("queue-depths"));
  if (auto v = a.value("threads")) o.sweep.threads = parse_list<int>("threads", *v, positive("threads"));
  if (auto v = a.value("single-submit")) o.sweep.single_submit = parse_switch("single-submit", *v);
  if (auto v = a.value("overlap-events")) o.sweep.overlap_events = parse_switch("overlap-events", *v);
  if (auto v = a.value("backend")) {
    if (*v == "all")
      o.sweep.backends = aio::all_io_backends();
    else if (auto b = aio::parse_io_backend(*v))
      o.sweep.backends = {*b};
    else
      throw UsageError("--backend '" + *v + "' is not libaio, io_uring or all");
  }
  if (auto v = a.integer("loops")) {
    if (*v < 1) throw UsageError("--loops must be at least 1");
    o.sweep.loops = static_cast<int>(*v);
  }
  const std::string fio = a.value("fio").value_or("each");
  o.fio = fio == "each" ? aio::FioMode::kEach : fio == "best" ? aio::FioMode::kBest : aio::FioMode::kOff;
  if (fio != "each" && fio != "best" && fio != "off") throw UsageError("--fio '" + fio + "' is not each, best or off");
  if (o.fio != aio::FioMode::kOff) {
    const auto found = aio::find_fio();
    if (!found) throw UsageError("--fio " + fio + ": fio is not on PATH (apt-get install fio), or pass --fio off");
    o.fio_path = *found;
  }
  if (auto v = a.value("min-ratio")) {
    try {
      o.min_ratio = std::stod(*v);
    } catch (const std::exception&) {
      throw UsageError("--min-ratio '" + *v + "' is not a number");
    }
  }
  return o;
}

// Each backend asked for must work here: a refusal names the backend and the reason up front.
void check_backends(const aio::IoBenchOptions& o) {
  for (auto backend : o.sweep.backends) {
    const auto probe = aio::probe_io_backend(backend, o.sweep.folder);
    if (!probe.works)
      throw UsageError(std::string("--backend ") + aio::io_backend_name(backend) + " does not work in " +
                       o.sweep.folder + ": " + probe.reason);
  }
}

int run_bench_io(const CommandArgs& args) {
  const ArgParser parser = bench_parser();
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  const aio::IoBenchOptions options = options_from(parsed);
  check_backends(options);
  const bool json = parsed.has("json");
  BenchIoPrinter printer(options, std::cout, json);
  aio::IoBenchResult result;
  const double started_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  try {
    result = aio::run_io_bench(options, [&](const aio::IoBenchRow& row) { printer.row(row); });
  } catch (const aio::IoError& e) {
    std::cerr << "shardscope bench io: " << configs::shown_text(e.what()) << "\n";
    return kExitFindings;
  }
  printer.finish(result);
  if (auto file = parsed.value("json-out")) {
    std::ofstream out(*file);
    out << bench_io_json(options, result).dump(2) << "\n";
    if (!out) throw UsageError("--json-out: cannot write '" + *file + "'");
  }
  if (auto db = parsed.value("db"))
    store_bench_io_session(*db, parsed.value("name").value_or("bench io " + options.sweep.folder), options, result,
                           std::vector<std::string>(args.begin(), args.end()), started_at);
  return result.ok ? kExitOk : kExitFindings;
}

}  // namespace

int run_bench_command(const CommandArgs& args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    (args.empty() ? std::cerr : std::cout) << "usage: shardscope bench io --path DIR [options]\n\n"
                                              "  io    O_DIRECT read/write GB/s over an aio sweep, beside fio "
                                              "(shardscope bench io --help)\n";
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args.front() != "io")
    throw UsageError("bench: unknown benchmark '" + args.front() + "'; the one there is: io");
  return run_bench_io(CommandArgs(args.begin() + 1, args.end()));
}

}  // namespace shardscope::app
