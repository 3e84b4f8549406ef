// IoQueue on io_uring through liburing: one submission-queue entry per request, completions from
// the completion ring. Kernels may disable io_uring (/proc/sys/kernel/io_uring_disabled, seccomp
// in containers); make_io_queue then throws with the kernel's answer.
#include <liburing.h>

#include <cerrno>

#include "aio/io_error.hpp"
#include "aio/io_queue.hpp"

namespace shardscope::aio {
namespace {

class UringQueue : public IoQueue {
 public:
  explicit UringQueue(unsigned depth) {
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    if (rc < 0)
      throw IoError("io_uring: io_uring_queue_init(" + std::to_string(depth) + ") failed: " + describe_errno(-rc) +
                        (rc == -EPERM || rc == -ENOSYS ? " (io_uring is disabled on this kernel or in this container: "
                                                         "/proc/sys/kernel/io_uring_disabled)"
                                                       : ""),
                    -rc);
  }
  ~UringQueue() override { io_uring_queue_exit(&ring_); }

  std::size_t submit(const IoRequest* requests, std::size_t count, bool single) override {
    std::size_t taken = 0;
    while (taken < count) {
      std::size_t prepared = 0;
      const std::size_t want = single ? 1 : count - taken;
      for (; prepared < want; ++prepared) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) break;  // the submission ring is full
        const IoRequest& r = requests[taken + prepared];
        if (r.write)
          io_uring_prep_write(sqe, r.fd, r.buffer, static_cast<unsigned>(r.bytes), static_cast<__u64>(r.offset));
        else
          io_uring_prep_read(sqe, r.fd, r.buffer, static_cast<unsigned>(r.bytes), static_cast<__u64>(r.offset));
        io_uring_sqe_set_data64(sqe, r.tag);
      }
      if (prepared == 0) break;
      int rc;
      do rc = io_uring_submit(&ring_);
      while (rc == -EINTR);
      if (rc < 0) throw IoError("io_uring: io_uring_submit failed: " + describe_errno(-rc), -rc);
      taken += prepared;  // io_uring_submit hands every prepared entry to the kernel
      if (prepared < want) break;
    }
    return taken;
  }

  void reap(std::size_t min, std::vector<IoCompletion>& out) override {
    io_uring_cqe* cqe = nullptr;
    if (min > 0) {
      int rc;
      do rc = io_uring_wait_cqe_nr(&ring_, &cqe, static_cast<unsigned>(min));
      while (rc == -EINTR);
      if (rc < 0) throw IoError("io_uring: io_uring_wait_cqe failed: " + describe_errno(-rc), -rc);
    }
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      out.push_back({io_uring_cqe_get_data64(cqe), static_cast<std::int64_t>(cqe->res)});
      ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
  }

 private:
  io_uring ring_{};
};

}  // namespace

std::unique_ptr<IoQueue> make_uring_queue(unsigned depth) { return std::make_unique<UringQueue>(depth); }

}  // namespace shardscope::aio
