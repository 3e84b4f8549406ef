#pragma once
// Writing safetensors without LibTorch: an 8-byte little-endian header length, the JSON header
// ({name: {dtype, shape, data_offsets}}, "__metadata__"), padded with spaces so the data starts
// 8-byte aligned, then each tensor's bytes in order. `shardscope ckpt consolidate` writes its
// output through this.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkpoints/host_tensor.hpp"

namespace shardscope::checkpoints {

using NamedHostTensors = std::vector<std::pair<std::string, HostTensor>>;

/// Writes `tensors` (in order) with string `metadata` atomically to `path`. Throws
/// CheckpointError for an empty, reserved or repeated name, or when `path` exists and is not a
/// regular file (a link, a FIFO, a device: it is not replaced).
void write_safetensors(const std::string& path, const NamedHostTensors& tensors,
                       const std::map<std::string, std::string>& metadata);

/// Throws CheckpointError (unreadable) when `path` exists and is not a regular file: an output
/// path must not replace a symbolic link, a FIFO or a device.
void refuse_non_regular_output(const std::string& path);

}  // namespace shardscope::checkpoints
