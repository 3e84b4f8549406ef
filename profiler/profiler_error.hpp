#pragma once
// The profiler library's typed errors: misuse of a timer (start twice, stop before start) and a
// failed CUDA or CUPTI call (the message names the call, the device and the code's text).

#include <stdexcept>
#include <string>

namespace shardscope::profiler {

class ProfilerError : public std::runtime_error {
 public:
  explicit ProfilerError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace shardscope::profiler
