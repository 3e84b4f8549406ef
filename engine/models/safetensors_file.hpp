#pragma once
// Reading and writing tensor data in the safetensors format: an 8-byte little-endian header
// length N, N bytes of JSON ({name: {dtype, shape, data_offsets}}, optional "__metadata__"),
// then the raw little-endian data. Headers are parsed by the estimator's safetensors_header;
// this file adds the data ranges and the writer.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "estimator/safetensors_header.hpp"

namespace shardscope::engine {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// The torch dtype of a safetensors dtype ("BF16" -> kBFloat16); nullopt for one torch lacks.
std::optional<torch::ScalarType> torch_dtype_of(const std::string& safetensors_dtype);

/// The safetensors name of a torch dtype (kFloat -> "F32"); throws ModelError for one without.
std::string safetensors_dtype_of(torch::ScalarType dtype);

/// Reads one tensor's bytes from the file `header` describes into a new CPU tensor of its dtype;
/// throws ModelError naming the file and tensor if the dtype is unsupported or the read fails.
torch::Tensor read_safetensors_data(const estimator::SafetensorsHeader& header,
                                    const estimator::SafetensorsTensor& tensor);

/// Reads every tensor of a .safetensors file (CPU tensors, in the header's order).
NamedTensors read_safetensors(const std::string& path);

/// Writes `tensors` (any device; copied to CPU, made contiguous) in the given order, with
/// optional string metadata, atomically through checkpoints/safetensors_writer.hpp. Throws
/// ModelError for a duplicate or empty name, an unsupported dtype, a `path` that exists as
/// anything but a regular file, or an I/O failure.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace shardscope::engine
