// IoQueue on Linux native AIO, as DeepSpeed's async_io op (libaio): io_setup, one iocb per
// request, io_submit, io_getevents. With O_DIRECT the kernel queues the transfer and returns at
// once; on a buffered file io_submit does the transfer before it returns (still correct).
//
// libaio.h gives the iocb and io_event layouts and the inline io_prep_* helpers; its four calls
// are made as the system calls they wrap, so no libaio library is linked: libaio.a defines its
// calls with symbol versions (io_getevents@@LIBAIO_0.4), which cannot go into the engine module
// (a shared object), and libaio.so would be one more library to find on the GPU machine.
#include <libaio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "aio/io_error.hpp"
#include "aio/io_queue.hpp"

namespace shardscope::aio {
namespace {

// libaio's convention: the result, or -errno.
long aio_syscall_result(long rc) { return rc < 0 ? -errno : rc; }

int sys_io_setup(int depth, io_context_t* context) {
  return static_cast<int>(aio_syscall_result(::syscall(SYS_io_setup, depth, context)));
}
int sys_io_destroy(io_context_t context) { return static_cast<int>(aio_syscall_result(::syscall(SYS_io_destroy, context))); }
int sys_io_submit(io_context_t context, long n, iocb** blocks) {
  return static_cast<int>(aio_syscall_result(::syscall(SYS_io_submit, context, n, blocks)));
}
int sys_io_getevents(io_context_t context, long min, long max, io_event* events, timespec* timeout) {
  return static_cast<int>(aio_syscall_result(::syscall(SYS_io_getevents, context, min, max, events, timeout)));
}

class LibaioQueue : public IoQueue {
 public:
  explicit LibaioQueue(unsigned depth) : depth_(depth), events_(depth) {
    const int rc = sys_io_setup(static_cast<int>(depth), &context_);
    if (rc < 0)
      throw IoError("libaio: io_setup(" + std::to_string(depth) + ") failed: " + describe_errno(-rc) +
                        (rc == -EAGAIN ? " (the system's aio context limit /proc/sys/fs/aio-max-nr is reached)" : ""),
                    -rc);
  }
  ~LibaioQueue() override { sys_io_destroy(context_); }

  std::size_t submit(const IoRequest* requests, std::size_t count, bool single) override {
    // The kernel copies each iocb during io_submit, so they need not outlive the call.
    std::vector<iocb> blocks(count);
    std::vector<iocb*> pointers(count);
    for (std::size_t i = 0; i < count; ++i) {
      const IoRequest& r = requests[i];
      if (r.write)
        io_prep_pwrite(&blocks[i], r.fd, r.buffer, r.bytes, r.offset);
      else
        io_prep_pread(&blocks[i], r.fd, r.buffer, r.bytes, r.offset);
      blocks[i].data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.tag));
      pointers[i] = &blocks[i];
    }
    std::size_t taken = 0;
    while (taken < count) {
      const long n = single ? 1 : static_cast<long>(count - taken);
      const int rc = sys_io_submit(context_, n, pointers.data() + taken);
      if (rc == -EAGAIN || rc == 0) break;  // the queue is full: reap first
      if (rc == -EINTR) continue;
      if (rc < 0) throw IoError("libaio: io_submit failed: " + describe_errno(-rc), -rc);
      taken += static_cast<std::size_t>(rc);
    }
    return taken;
  }

  void reap(std::size_t min, std::vector<IoCompletion>& out) override {
    for (;;) {
      const int rc = sys_io_getevents(context_, static_cast<long>(min), static_cast<long>(depth_), events_.data(), nullptr);
      if (rc == -EINTR) continue;
      if (rc < 0) throw IoError("libaio: io_getevents failed: " + describe_errno(-rc), -rc);
      for (int i = 0; i < rc; ++i)
        out.push_back({static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(events_[i].data)),
                       static_cast<std::int64_t>(static_cast<long>(events_[i].res))});
      return;
    }
  }

 private:
  io_context_t context_ = nullptr;
  unsigned depth_;
  std::vector<io_event> events_;
};

}  // namespace

std::unique_ptr<IoQueue> make_libaio_queue(unsigned depth) { return std::make_unique<LibaioQueue>(depth); }

}  // namespace shardscope::aio
