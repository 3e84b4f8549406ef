#pragma once
// Whether each I/O backend works on this machine, tried for real: a kernel queue is set up and a
// 4 KiB O_DIRECT write and read-back goes through it in a temporary folder. `shardscope report`
// prints the answer as DeepSpeed's ds_report prints its async_io op (compiled in / compatible).

#include <string>

#include "aio/io_queue.hpp"

namespace shardscope::aio {

struct BackendProbe {
  IoBackend backend = IoBackend::kLibaio;
  bool compiled_in = false;
  bool works = false;
  std::string detail;  ///< what was tried, e.g. "4 KiB O_DIRECT write + read in /tmp (ext4)"
  std::string reason;  ///< why it is not compiled in or does not work
};

/// Probes `backend` with a round trip through a file in `folder` (removed afterwards).
BackendProbe probe_io_backend(IoBackend backend, const std::string& folder);

/// The first backend that works here (libaio first, as DeepSpeed), or `requested` when given;
/// throws IoError naming every backend's reason when none works.
IoBackend choose_io_backend(const std::string& requested, const std::string& folder);

}  // namespace shardscope::aio
