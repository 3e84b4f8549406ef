#pragma once
// Errors of the data loaders: a missing, short or misaligned token file, a token outside the
// model's vocabulary, a rank outside the world. Messages name the file and the remedy.

#include <stdexcept>

namespace shardscope::engine {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardscope::engine
