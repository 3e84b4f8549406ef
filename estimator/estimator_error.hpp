#pragma once
// Errors of the estimator library. Bad user input (a config.json without hidden_size, a truncated
// safetensors header, "80GiX" as a size) throws EstimatorError with the file, key or value named
// and the remedy; front ends catch it at the edge and print it.

#include <stdexcept>
#include <string>

namespace shardscope::estimator {

class EstimatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardscope::estimator
