// The backend-independent part of io_queue.hpp; libaio_queue.cpp and uring_queue.cpp are compiled
// in only when their library was found (SHARDSCOPE_AIO_HAS_LIBAIO, SHARDSCOPE_AIO_HAS_URING).
#include "aio/io_queue.hpp"

#include "aio/io_error.hpp"

namespace shardscope::aio {

#ifdef SHARDSCOPE_AIO_HAS_LIBAIO
std::unique_ptr<IoQueue> make_libaio_queue(unsigned depth);
#endif
#ifdef SHARDSCOPE_AIO_HAS_URING
std::unique_ptr<IoQueue> make_uring_queue(unsigned depth);
#endif

const char* io_backend_name(IoBackend backend) { return backend == IoBackend::kLibaio ? "libaio" : "io_uring"; }

std::optional<IoBackend> parse_io_backend(const std::string& text) {
  if (text == "libaio") return IoBackend::kLibaio;
  if (text == "io_uring") return IoBackend::kIoUring;
  return std::nullopt;
}

bool io_backend_compiled_in(IoBackend backend) {
#ifdef SHARDSCOPE_AIO_HAS_LIBAIO
  if (backend == IoBackend::kLibaio) return true;
#endif
#ifdef SHARDSCOPE_AIO_HAS_URING
  if (backend == IoBackend::kIoUring) return true;
#endif
  return false;
}

std::vector<IoBackend> all_io_backends() { return {IoBackend::kLibaio, IoBackend::kIoUring}; }

std::unique_ptr<IoQueue> make_io_queue(IoBackend backend, unsigned depth) {
  if (depth == 0) throw IoError("an I/O queue needs a depth of at least 1 (aio.queue_depth)", 0);
#ifdef SHARDSCOPE_AIO_HAS_LIBAIO
  if (backend == IoBackend::kLibaio) return make_libaio_queue(depth);
#endif
#ifdef SHARDSCOPE_AIO_HAS_URING
  if (backend == IoBackend::kIoUring) return make_uring_queue(depth);
#endif
  const bool libaio = backend == IoBackend::kLibaio;
  throw IoError(std::string("this build of ShardScope has no ") + io_backend_name(backend) +
                    " backend: its library was not found at configure time (install " +
                    (libaio ? "libaio-dev" : "liburing-dev") + " and reconfigure; the configure summary "
                    "line says which I/O backends were found)",
                0);
}

}  // namespace shardscope::aio
