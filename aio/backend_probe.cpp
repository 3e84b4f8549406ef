#include "aio/backend_probe.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "aio/aio_handle.hpp"
#include "aio/aligned_buffer.hpp"
#include "aio/io_error.hpp"
#include "aio/swap_file.hpp"
#include "aio/swap_folder.hpp"

namespace shardscope::aio {
namespace {

// One 4 KiB round trip on `backend` through `file`; throws what the kernel said.
void round_trip(IoBackend backend, const SwapFile& file) {
  AioSettings settings;
  settings.backend = backend;
  settings.queue_depth = 1;
  settings.block_size = static_cast<std::int64_t>(kIoAlignment);
  AioHandle handle(settings);
  AlignedBuffer out(kIoAlignment), in(kIoAlignment);
  std::memset(out.data(), 0x5a, out.size());
  handle.async_pwrite(file.target(), out.data(), out.size(), 0);
  handle.wait();
  handle.async_pread(file.target(), in.data(), in.size(), 0);
  handle.wait();
  if (std::memcmp(in.data(), out.data(), in.size()) != 0)
    throw IoError("the block read back differs from the block written", 0);
}

}  // namespace

BackendProbe probe_io_backend(IoBackend backend, const std::string& folder) {
  BackendProbe probe;
  probe.backend = backend;
  probe.compiled_in = io_backend_compiled_in(backend);
  if (!probe.compiled_in) {
    probe.reason = std::string("not compiled in: install ") +
                   (backend == IoBackend::kLibaio ? "libaio-dev" : "liburing-dev") + " and rebuild";
    return probe;
  }
  std::string dir = folder + "/shardscope_aio_probe_XXXXXX";
  if (!::mkdtemp(dir.data())) {
    probe.reason = "cannot make a probe folder in " + folder + ": " + describe_errno(errno);
    return probe;
  }
  try {
    SwapFolder swap(folder, dir, "");
    probe.detail = std::string("4 KiB ") + (swap.direct_io() ? "O_DIRECT" : "buffered") + " write + read in " +
                   folder + " (" + swap.filesystem() + ")";
    SwapFile file(swap.file("probe.swp"), static_cast<std::int64_t>(kIoAlignment), swap.direct_io(), "");
    round_trip(backend, file);
    probe.works = true;
  } catch (const std::exception& e) {
    probe.reason = e.what();
  }
  ::rmdir(dir.c_str());
  return probe;
}

IoBackend choose_io_backend(const std::string& requested, const std::string& folder) {
  if (!requested.empty()) {
    const auto backend = parse_io_backend(requested);
    if (!backend)
      throw IoError("I/O backend '" + requested + "' is not libaio or io_uring (SHARDSCOPE_AIO_BACKEND)", EINVAL);
    const BackendProbe probe = probe_io_backend(*backend, folder);
    if (!probe.works) throw IoError(std::string(io_backend_name(*backend)) + " does not work here: " + probe.reason, 0);
    return *backend;
  }
  std::string reasons;
  for (IoBackend backend : all_io_backends()) {
    const BackendProbe probe = probe_io_backend(backend, folder);
    if (probe.works) return backend;
    reasons += std::string("\n  ") + io_backend_name(backend) + ": " + probe.reason;
  }
  throw IoError("no asynchronous I/O backend works on this machine, so NVMe offload cannot run:" + reasons +
                    "\n  (`shardscope report` shows the async_io lines; offload to \"cpu\" instead)",
                0);
}

}  // namespace shardscope::aio
