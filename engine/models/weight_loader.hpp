#pragma once
// Loads Hugging Face weights from safetensors into a built-in model: a single .safetensors file
// or a model.safetensors.index.json next to its shards. Every parameter must be found with the
// right shape and a float dtype before anything is copied, so a failed load leaves the model as
// it was.

#include <cstddef>
#include <string>
#include <vector>

namespace shardscope::engine {

class TrainableModel;

struct WeightLoadReport {
  std::vector<std::string> files;     ///< the .safetensors files read
  std::size_t loaded = 0;             ///< parameters filled
  std::vector<std::string> warnings;  ///< e.g. tensors in the files the model does not use
};

/// The .safetensors files behind `path`: itself, or the shards its index's weight_map names.
std::vector<std::string> safetensors_files(const std::string& path);

/// Copies every parameter of `model` from the file(s) (F32, F16 or BF16, converted to the
/// parameter's dtype and device). Names are Hugging Face's; a checkpoint of the base model
/// (without "transformer." / "model.") is accepted too. Throws ModelError naming the file and
/// tensor for a missing tensor, a shape mismatch (expected vs found) or an unsupported dtype.
WeightLoadReport load_safetensors_weights(TrainableModel& model, const std::string& path);

}  // namespace shardscope::engine
