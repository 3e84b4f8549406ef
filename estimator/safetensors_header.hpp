#pragma once
// Model descriptions from safetensors checkpoints, reading only the header: an 8-byte little-
// endian length N, then N bytes of JSON mapping each tensor name to {dtype, shape, data_offsets}.
// The weights after it are never read, so a 140 GB checkpoint is described in milliseconds.
// A sharded checkpoint is read through its model.safetensors.index.json (weight_map).

#include <cstdint>
#include <string>
#include <vector>

#include "estimator/model_description.hpp"

namespace shardscope::estimator {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  ///< as written: "BF16", "F32", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  ///< data_offsets, relative to the end of the header
  std::uint64_t end = 0;
  double numel() const;
};

struct SafetensorsHeader {
  std::string path;
  std::uint64_t header_bytes = 0;  ///< N, the JSON header's length
  std::uint64_t file_bytes = 0;
  std::vector<SafetensorsTensor> tensors;
};

/// Bytes per element of a safetensors dtype ("BF16" -> 2); throws EstimatorError if unknown.
int safetensors_dtype_bytes(const std::string& dtype);

/// Reads and checks one file's header (length, JSON, dtypes, shapes, offsets against sizes and
/// the file length); throws EstimatorError naming the file and the tensor at fault.
SafetensorsHeader read_safetensors_header(const std::string& path);

/// A model from a .safetensors file or a model.safetensors.index.json next to its shards:
/// exact parameter count, count per dtype, largest tensor and largest module (tensors grouped by
/// the name before their last dot, DeepSpeed's recurse=False view).
ModelDescription describe_safetensors(const std::string& path);

}  // namespace shardscope::estimator
