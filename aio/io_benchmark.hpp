#pragma once
// `shardscope bench io`'s measurements, the counterpart of DeepSpeed's ds_io / ds_nvme_tune: the
// GB/s of one whole-buffer O_DIRECT write and read of `io_size` bytes through AioHandle, for each
// point of a sweep over block size, queue depth and worker threads (intra_op_parallelism), and
// DeepSpeed's pick of the best point (the highest read + write GB/s) as a paste-ready aio block.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aio/aio_handle.hpp"
#include "aio/fio_runner.hpp"

namespace shardscope::aio {

struct IoSweepOptions {
  std::string folder;                       ///< where the test file goes (the disk under test)
  std::int64_t io_size = 400LL << 20;       ///< bytes per transfer (ds_io's --io_size, default 400M)
  int loops = 1;                            ///< transfers per point; the GB/s is their mean
  std::vector<std::int64_t> block_sizes{1 << 20, 8 << 20};  ///< ds_nvme_tune's default sweep
  std::vector<int> queue_depths{32, 128};
  std::vector<int> threads{1, 2, 4, 8};
  std::vector<bool> single_submit{false};
  std::vector<bool> overlap_events{true};
  std::vector<IoBackend> backends{IoBackend::kLibaio};
};

struct IoMeasurement {
  AioSettings settings;
  double write_gbps = 0, read_gbps = 0;          ///< 1e9 bytes per second
  double write_seconds = 0, read_seconds = 0;    ///< per transfer (mean over loops)
};

/// Every point of the sweep, in table order (backend, block size, queue depth, threads, ...).
std::vector<AioSettings> io_sweep_points(const IoSweepOptions& options);
/// Measures one point: writes `io_size` bytes to `file_path` (created, reserved, written once
/// untimed, removed after) and reads them back, `loops` timed transfers each. Throws IoError with
/// the file and the cause.
IoMeasurement measure_io_point(const AioSettings& settings, const std::string& file_path, std::int64_t io_size,
                               int loops, bool direct);
/// DeepSpeed's choice (ds_nvme_tune): the highest read + write GB/s. `rows` must not be empty.
const IoMeasurement& best_io_measurement(const std::vector<IoMeasurement>& rows);
/// The "aio" block of a DeepSpeed config for `settings`, e.g. {"aio": {"block_size": 1048576, ...}}.
std::string aio_block_json(const AioSettings& settings, int indent = -1);

/// Which points fio measures too: every one, only the best, or none.
enum class FioMode { kEach, kBest, kOff };

struct IoBenchOptions {
  IoSweepOptions sweep;
  FioMode fio = FioMode::kEach;
  std::string fio_path;    ///< the fio executable (find_fio()); required unless fio is kOff
  double min_ratio = 0.9;  ///< the best point's read and write must reach this fraction of fio's
};

struct IoBenchRow {
  IoMeasurement ours;
  std::optional<FioResult> fio;     ///< fio on the same folder, block size, depth and jobs
  double write_ratio() const { return fio && fio->write_gbps > 0 ? ours.write_gbps / fio->write_gbps : 0; }
  double read_ratio() const { return fio && fio->read_gbps > 0 ? ours.read_gbps / fio->read_gbps : 0; }
};

struct IoBenchResult {
  std::vector<IoBenchRow> rows;
  std::size_t best = 0;       ///< DeepSpeed's pick: the highest read + write GB/s
  bool direct_io = true;      ///< O_DIRECT worked in the folder
  std::string filesystem;     ///< of the folder
  bool ok = true;             ///< fio off, or the best point at or above min_ratio for read and write
};

/// The whole benchmark: the sweep, fio for the points `fio` asks for, the best point and the
/// verdict. `on_row` sees each row as it completes (fio filled in when measured with it).
IoBenchResult run_io_bench(const IoBenchOptions& options, const std::function<void(const IoBenchRow&)>& on_row);

}  // namespace shardscope::aio
