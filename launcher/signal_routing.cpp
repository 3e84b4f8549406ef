#include "launcher/signal_routing.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

namespace shardscope::launcher {
namespace {

std::atomic<int> g_signal_wake_fd{-1};

extern "C" void forward_signal_to_wake_pipe(int signal) {
  const int saved_errno = errno;
  const int fd = g_signal_wake_fd.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(signal);
    [[maybe_unused]] const auto written = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

SignalRouting::SignalRouting(int wake_fd) : active_(wake_fd >= 0) {
  if (!active_) return;
  int expected = -1;
  if (!g_signal_wake_fd.compare_exchange_strong(expected, wake_fd))
    throw std::logic_error("two launchers cannot both handle this process's signals");
  struct sigaction action {};
  action.sa_handler = forward_signal_to_wake_pipe;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &old_int_);
  ::sigaction(SIGTERM, &action, &old_term_);
}

SignalRouting::~SignalRouting() {
  if (!active_) return;
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  g_signal_wake_fd.store(-1);
}

}  // namespace shardscope::launcher
