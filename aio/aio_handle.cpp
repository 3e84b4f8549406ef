#include "aio/aio_handle.hpp"

#include <algorithm>
#include <cerrno>
#include <deque>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "aio/aligned_buffer.hpp"

namespace shardscope::aio {

struct AioHandle::Block {
  int fd = -1;
  std::shared_ptr<const std::string> path;
  char* buffer = nullptr;
  std::size_t bytes = 0;
  std::int64_t offset = 0;
  bool write = false;
};

// One thread and one kernel queue: takes blocks in order and keeps up to queue_depth in flight.
class AioHandle::Worker {
 public:
  Worker(AioHandle& handle, std::unique_ptr<IoQueue> queue)
      : handle_(handle), queue_(std::move(queue)), thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void push(Block block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back(std::move(block));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    const auto& s = handle_.settings_;
    const auto depth = static_cast<std::size_t>(s.queue_depth);
    std::vector<Block> batch;
    std::vector<IoCompletion> done;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !pending_.empty() || !flying_.empty(); });
        if (stop_ && pending_.empty() && flying_.empty()) return;
        // overlap_events: refill as requests complete; otherwise one whole batch at a time.
        std::size_t room = s.overlap_events || flying_.empty() ? depth - flying_.size() : 0;
        for (; room > 0 && !pending_.empty(); --room) {
          batch.push_back(std::move(pending_.front()));
          pending_.pop_front();
        }
      }
      if (!batch.empty()) submit_batch(batch);
      if (flying_.empty()) continue;
      done.clear();
      try {
        queue_->reap(s.overlap_events ? 1 : flying_.size(), done);
      } catch (const IoError& e) {
        fail_all_flying(e);
        continue;
      }
      for (const auto& c : done) complete(c);
    }
  }

  void submit_batch(std::vector<Block>& batch) {
    std::vector<IoRequest> requests;
    for (const Block& b : batch) requests.push_back({b.fd, b.buffer, b.bytes, b.offset, b.write, next_tag_++});
    std::size_t taken = 0;
    int refused = 0;
    try {
      taken = queue_->submit(requests.data(), requests.size(), handle_.settings_.single_submit);
      // Nothing in flight and still no room: the system's aio limit, not this queue, is full.
      if (taken == 0 && flying_.empty()) refused = EAGAIN;
    } catch (const IoError& e) {
      refused = e.error();  // the kernel refused the first request outright (a bad descriptor)
    }
    for (std::size_t i = 0; i < taken; ++i) flying_.emplace(requests[i].tag, std::move(batch[i]));
    std::size_t first_back = taken;
    if (refused != 0 && taken == 0) {
      handle_.block_finished(failure(batch.front(), refused));
      first_back = 1;
    }
    if (first_back < batch.size()) {  // the kernel queue is full: these go first next time
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = batch.size(); i-- > first_back;) pending_.push_front(std::move(batch[i]));
    }
    batch.clear();
  }

  void complete(const IoCompletion& c) {
    auto it = flying_.find(c.tag);
    if (it == flying_.end()) return;
    Block block = std::move(it->second);
    flying_.erase(it);
    if (c.result < 0) {
      handle_.block_finished(failure(block, static_cast<int>(-c.result)));
    } else if (c.result == 0) {
      handle_.block_finished(failure(block, 0));
    } else if (static_cast<std::size_t>(c.result) < block.bytes) {
      // A short transfer: the rest goes again (at the end of a file a read then returns 0).
      const auto moved = static_cast<std::size_t>(c.result);
      block.buffer += moved;
      block.offset += static_cast<std::int64_t>(moved);
      block.bytes -= moved;
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_front(std::move(block));
    } else {
      handle_.block_finished(std::nullopt);
    }
  }

  void fail_all_flying(const IoError& e) {
    for (auto& [tag, block] : flying_) handle_.block_finished(failure(block, e.error()));
    flying_.clear();
  }

  IoError failure(const Block& b, int error) const {
    const std::string range = "(" + format_bytes(static_cast<double>(b.bytes)) + " at offset " +
                              std::to_string(b.offset) + ")";
    const char* what = b.write ? "cannot write" : "cannot read";
    if (error != 0) return make_io_error(handle_.settings_.owner, what, *b.path, error, range);
    return make_io_error(handle_.settings_.owner, what, *b.path, 0,
                         range + (b.write ? ": the kernel wrote 0 bytes"
                                          : ": unexpected end of file (the file is shorter than what was written to it: "
                                            "was it truncated or replaced?)"));
  }

  AioHandle& handle_;
  std::unique_ptr<IoQueue> queue_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Block> pending_;  ///< guarded by mutex_
  bool stop_ = false;          ///< guarded by mutex_
  std::unordered_map<std::uint64_t, Block> flying_;  ///< the worker thread's own
  std::uint64_t next_tag_ = 1;
  std::thread thread_;  ///< last: starts after the members it uses
};

void check_aio_settings(const AioSettings& s) {
  if (s.block_size <= 0 || s.block_size % static_cast<std::int64_t>(kIoAlignment) != 0)
    throw std::invalid_argument("aio.block_size " + std::to_string(s.block_size) +
                                " is not a positive multiple of 4096: O_DIRECT transfers are 4 KiB aligned; use e.g. "
                                "1048576 (DeepSpeed's default)");
  if (s.queue_depth < 1)
    throw std::invalid_argument("aio.queue_depth " + std::to_string(s.queue_depth) + " must be at least 1 (default 8)");
  if (s.intra_op_parallelism < 1)
    throw std::invalid_argument("aio.intra_op_parallelism " + std::to_string(s.intra_op_parallelism) +
                                " must be at least 1 (default 1)");
}

AioHandle::AioHandle(AioSettings settings) : settings_(std::move(settings)) {
  check_aio_settings(settings_);
  for (int i = 0; i < settings_.intra_op_parallelism; ++i)
    workers_.push_back(
        std::make_unique<Worker>(*this, make_io_queue(settings_.backend, static_cast<unsigned>(settings_.queue_depth))));
}

AioHandle::~AioHandle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return outstanding_blocks_ == 0; });
  lock.unlock();
  workers_.clear();
}

void AioHandle::async_pread(const IoTarget& target, void* buffer, std::size_t bytes, std::int64_t offset) {
  submit(target, static_cast<char*>(buffer), bytes, offset, false);
}

void AioHandle::async_pwrite(const IoTarget& target, const void* buffer, std::size_t bytes, std::int64_t offset) {
  // The kernel only reads a write's buffer.
  submit(target, const_cast<char*>(static_cast<const char*>(buffer)), bytes, offset, true);
}

void AioHandle::submit(const IoTarget& target, char* buffer, std::size_t bytes, std::int64_t offset, bool write) {
  if (target.fd < 0) throw std::invalid_argument("AioHandle: '" + target.path + "' is not open");
  if (target.direct && (!is_io_aligned(buffer, bytes) || offset % static_cast<std::int64_t>(kIoAlignment) != 0))
    throw std::invalid_argument("AioHandle: an O_DIRECT transfer of " + std::to_string(bytes) + " bytes at offset " +
                                std::to_string(offset) + " of '" + target.path +
                                "' is not 4 KiB aligned (buffer, length and offset must be)");
  const auto path = std::make_shared<const std::string>(target.path);
  // DeepSpeed's intra-op parallelism: each worker takes one contiguous, aligned slice.
  const auto workers = static_cast<std::int64_t>(workers_.size());
  const auto total = static_cast<std::int64_t>(bytes);
  std::int64_t slice = (total + workers - 1) / workers;
  if (target.direct) slice = io_aligned(slice);
  std::vector<std::pair<std::size_t, Block>> blocks;
  for (std::int64_t begin = 0, w = 0; begin < total; begin += slice, ++w)
    for (std::int64_t at = begin; at < std::min(total, begin + slice); at += settings_.block_size) {
      const std::int64_t n = std::min({settings_.block_size, total - at, begin + slice - at});
      blocks.push_back({static_cast<std::size_t>(w),
                        Block{target.fd, path, buffer + at, static_cast<std::size_t>(n), offset + at, write}});
    }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outstanding_blocks_ += blocks.size();
    ++operations_;
  }
  for (auto& [worker, block] : blocks) workers_[worker]->push(std::move(block));
}

void AioHandle::block_finished(std::optional<IoError> error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error && !first_error_) first_error_ = std::move(error);
  if (--outstanding_blocks_ == 0) idle_.notify_all();
}

std::size_t AioHandle::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return outstanding_blocks_ == 0; });
  const std::size_t done = operations_;
  operations_ = 0;
  if (first_error_) {
    IoError error = std::move(*first_error_);
    first_error_.reset();
    throw error;
  }
  return done;
}

std::size_t AioHandle::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return operations_;
}

}  // namespace shardscope::aio
