#include "aio/io_benchmark.hpp"

#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "aio/aligned_buffer.hpp"
#include "aio/swap_file.hpp"
#include "aio/swap_folder.hpp"

namespace shardscope::aio {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Random contents, as fio writes: a drive that compresses or dedupes zeros must not flatter us.
void fill_random(AlignedBuffer& buffer) {
  std::mt19937_64 generator(20240611);
  auto* words = static_cast<std::uint64_t*>(buffer.data());
  for (std::size_t i = 0; i < buffer.size() / sizeof(std::uint64_t); ++i) words[i] = generator();
}

double timed_transfer(AioHandle& handle, const SwapFile& file, AlignedBuffer& buffer, bool write) {
  const auto start = Clock::now();
  if (write)
    handle.async_pwrite(file.target(), buffer.data(), buffer.size(), 0);
  else
    handle.async_pread(file.target(), buffer.data(), buffer.size(), 0);
  handle.wait();
  return seconds_since(start);
}

}  // namespace

std::vector<AioSettings> io_sweep_points(const IoSweepOptions& o) {
  std::vector<AioSettings> points;
  for (IoBackend backend : o.backends)
    for (std::int64_t block : o.block_sizes)
      for (int depth : o.queue_depths)
        for (int threads : o.threads)
          for (bool single : o.single_submit)
            for (bool overlap : o.overlap_events) {
              AioSettings s;
              s.backend = backend;
              s.block_size = block;
              s.queue_depth = depth;
              s.intra_op_parallelism = threads;
              s.single_submit = single;
              s.overlap_events = overlap;
              points.push_back(s);
            }
  return points;
}

IoMeasurement measure_io_point(const AioSettings& settings, const std::string& file_path, std::int64_t io_size,
                               int loops, bool direct) {
  if (io_size <= 0 || loops < 1) throw std::invalid_argument("bench io: the size and the loop count must be positive");
  IoMeasurement m;
  m.settings = settings;
  AlignedBuffer buffer(static_cast<std::size_t>(io_size));
  fill_random(buffer);
  SwapFile file(file_path, static_cast<std::int64_t>(buffer.size()), direct, settings.owner);
  AioHandle handle(settings);
  // One untimed pass first, as fio lays its file out before it measures: the timed writes then
  // overwrite allocated blocks, as a swap file's writes do after a run's first (a write into
  // reserved but never written blocks also converts their extents, which is slower).
  timed_transfer(handle, file, buffer, true);
  for (int i = 0; i < loops; ++i) m.write_seconds += timed_transfer(handle, file, buffer, true);
  for (int i = 0; i < loops; ++i) m.read_seconds += timed_transfer(handle, file, buffer, false);
  m.write_seconds /= loops;
  m.read_seconds /= loops;
  const auto bytes = static_cast<double>(buffer.size());
  m.write_gbps = bytes / m.write_seconds / 1e9;
  m.read_gbps = bytes / m.read_seconds / 1e9;
  return m;
}

const IoMeasurement& best_io_measurement(const std::vector<IoMeasurement>& rows) {
  if (rows.empty()) throw std::invalid_argument("bench io: no measurements to choose from");
  const IoMeasurement* best = &rows.front();
  for (const auto& row : rows)
    if (row.read_gbps + row.write_gbps > best->read_gbps + best->write_gbps) best = &row;
  return *best;
}

std::string aio_block_json(const AioSettings& s, int indent) {
  nlohmann::ordered_json block;
  block["block_size"] = s.block_size;
  block["queue_depth"] = s.queue_depth;
  block["intra_op_parallelism"] = s.intra_op_parallelism;
  block["single_submit"] = s.single_submit;
  block["overlap_events"] = s.overlap_events;
  nlohmann::ordered_json doc;
  doc["aio"] = block;
  return doc.dump(indent);
}

namespace {

FioJob fio_job_for(const IoSweepOptions& sweep, const std::string& folder, const IoMeasurement& m, bool direct) {
  FioJob job;
  job.folder = folder;
  job.io_size = sweep.io_size;
  job.block_size = m.settings.block_size;
  job.queue_depth = m.settings.queue_depth;
  job.jobs = m.settings.intra_op_parallelism;
  job.engine = m.settings.backend;
  job.direct = direct;
  return job;
}

}  // namespace

IoBenchResult run_io_bench(const IoBenchOptions& o, const std::function<void(const IoBenchRow&)>& on_row) {
  if (o.fio != FioMode::kOff && o.fio_path.empty())
    throw std::invalid_argument("bench io: fio is not on PATH (apt-get install fio), or pass --fio off");
  IoBenchResult result;
  SwapFolder folder(o.sweep.folder, o.sweep.folder + "/shardscope_bench_io", "bench io");
  result.direct_io = folder.direct_io();
  result.filesystem = folder.filesystem();
  for (const AioSettings& point : io_sweep_points(o.sweep)) {
    IoBenchRow row;
    row.ours = measure_io_point(point, folder.file("bench.dat"), o.sweep.io_size, o.sweep.loops, folder.direct_io());
    if (o.fio == FioMode::kEach)
      row.fio = run_fio(o.fio_path, fio_job_for(o.sweep, folder.path(), row.ours, folder.direct_io()));
    result.rows.push_back(row);
    if (on_row) on_row(result.rows.back());
  }
  std::vector<IoMeasurement> measured;
  for (const auto& row : result.rows) measured.push_back(row.ours);
  result.best = static_cast<std::size_t>(&best_io_measurement(measured) - measured.data());
  IoBenchRow& best = result.rows[result.best];
  if (o.fio == FioMode::kBest)
    best.fio = run_fio(o.fio_path, fio_job_for(o.sweep, folder.path(), best.ours, folder.direct_io()));
  if (best.fio) result.ok = best.write_ratio() >= o.min_ratio && best.read_ratio() >= o.min_ratio;
  return result;
}

}  // namespace shardscope::aio
