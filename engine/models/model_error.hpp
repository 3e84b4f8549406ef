#pragma once
// Errors of the built-in models and their weights: a shape the model cannot take, a config.json
// it cannot read, a safetensors file that does not fit the model. Messages name the file, the
// tensor or the key, what was expected and what was found.

#include <stdexcept>
#include <string>

namespace shardscope::engine {

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardscope::engine
