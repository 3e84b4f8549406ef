#pragma once
// DeepSpeed's aio_handle in C++: asynchronous O_DIRECT reads and writes of whole buffers, each
// split across `intra_op_parallelism` worker threads (one kernel queue each) and cut into blocks
// of `block_size` bytes, with at most `queue_depth` blocks in flight per worker. The caller goes on
// while the kernel moves the data (that is what lets a swap-in overlap the CPU optimizer step) and
// calls wait() before it touches the buffers. The `aio` block of a DeepSpeed config is these
// settings: block_size, queue_depth, intra_op_parallelism, single_submit, overlap_events.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aio/io_error.hpp"
#include "aio/io_queue.hpp"

namespace shardscope::aio {

struct AioSettings {
  std::int64_t block_size = 1048576;  ///< bytes per request to the kernel (a multiple of 4 KiB)
  int queue_depth = 8;                ///< requests in flight per worker
  int intra_op_parallelism = 1;       ///< worker threads; each operation is split across them
  bool single_submit = false;         ///< one system call per request instead of one per batch
  bool overlap_events = true;         ///< refill the queue as requests complete (else batch by batch)
  IoBackend backend = IoBackend::kLibaio;
  std::string owner;                  ///< who does the I/O, for messages: "rank 1"
};

/// The file an operation reads or writes: its descriptor, its path for messages, and whether it
/// was opened with O_DIRECT (then buffers, lengths and offsets must be 4 KiB aligned).
struct IoTarget {
  int fd = -1;
  std::string path;
  bool direct = true;
};

class AioHandle {
 public:
  /// Starts the workers and their kernel queues. Throws IoError when the backend is missing or
  /// refused, std::invalid_argument naming the aio key of a setting out of range.
  explicit AioHandle(AioSettings settings);
  /// Waits for what is in flight (errors are dropped: call wait() to see them) and stops.
  ~AioHandle();
  AioHandle(const AioHandle&) = delete;
  AioHandle& operator=(const AioHandle&) = delete;

  /// Starts reading `bytes` at `offset` of `target` into `buffer`; returns at once.
  void async_pread(const IoTarget& target, void* buffer, std::size_t bytes, std::int64_t offset);
  /// Starts writing `bytes` of `buffer` to `target` at `offset`; returns at once.
  void async_pwrite(const IoTarget& target, const void* buffer, std::size_t bytes, std::int64_t offset);
  /// Waits until every operation started since the last wait() finished and returns how many
  /// there were. Throws IoError for the first that failed, once all of them have stopped (so no
  /// buffer is still in use), naming the owner, the file, the range and the kernel's cause.
  std::size_t wait();
  /// Operations started and not yet waited for.
  std::size_t pending() const;
  const AioSettings& settings() const { return settings_; }

 private:
  struct Block;
  class Worker;
  void submit(const IoTarget& target, char* buffer, std::size_t bytes, std::int64_t offset, bool write);
  void block_finished(std::optional<IoError> error);

  AioSettings settings_;
  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t outstanding_blocks_ = 0;  ///< guarded by mutex_
  std::size_t operations_ = 0;          ///< started since the last wait(); guarded by mutex_
  std::optional<IoError> first_error_;  ///< guarded by mutex_
};

/// Throws std::invalid_argument naming the aio key when a setting cannot run (block_size not a
/// positive multiple of 4 KiB, queue_depth or intra_op_parallelism below 1).
void check_aio_settings(const AioSettings& settings);

}  // namespace shardscope::aio
