#include "sessions/wall_clock.hpp"

#include <unistd.h>

#include <chrono>

namespace shardscope::sessions {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace shardscope::sessions
