#pragma once
// A queue of reads and writes handed to the kernel's asynchronous interface, and the completions
// it hands back: libaio (io_setup/io_submit/io_getevents, what DeepSpeed's async_io op uses) or
// io_uring (through liburing). Either may be missing at build time (the configure summary says
// which were found); make_io_queue then refuses with the package to install. One queue belongs to
// one thread (AioHandle gives each worker its own).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::aio {

enum class IoBackend { kLibaio, kIoUring };

/// "libaio" or "io_uring".
const char* io_backend_name(IoBackend backend);
/// Parses "libaio" or "io_uring"; nullopt for anything else.
std::optional<IoBackend> parse_io_backend(const std::string& text);
/// Whether this build has the backend's library (found at configure time).
bool io_backend_compiled_in(IoBackend backend);
/// Both backends, in preference order (libaio first, as DeepSpeed's async_io op).
std::vector<IoBackend> all_io_backends();

struct IoRequest {
  int fd = -1;
  void* buffer = nullptr;
  std::size_t bytes = 0;
  std::int64_t offset = 0;
  bool write = false;
  std::uint64_t tag = 0;  ///< handed back with the completion
};

struct IoCompletion {
  std::uint64_t tag = 0;
  std::int64_t result = 0;  ///< bytes transferred, or -errno
};

class IoQueue {
 public:
  virtual ~IoQueue() = default;
  /// Hands up to `count` requests to the kernel; returns how many it took (it may take fewer
  /// when its queue is full: the caller offers the rest again after reaping). `single` submits
  /// them one system call each (DeepSpeed's single_submit).
  virtual std::size_t submit(const IoRequest* requests, std::size_t count, bool single) = 0;
  /// Waits until at least `min` requests completed and appends every completion that is ready.
  virtual void reap(std::size_t min, std::vector<IoCompletion>& out) = 0;
};

/// A queue of `depth` entries on `backend`. Throws IoError naming the backend and the cause when
/// the build lacks it (with the Debian package to install) or the kernel refuses it (io_uring
/// disabled by sysctl, too many aio contexts: /proc/sys/fs/aio-max-nr).
std::unique_ptr<IoQueue> make_io_queue(IoBackend backend, unsigned depth);

}  // namespace shardscope::aio
