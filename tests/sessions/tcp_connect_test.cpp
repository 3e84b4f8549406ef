#include "sessions/tcp_connect.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"

namespace shardscope::sessions {
namespace {

// A listener whose accept queue is full: the kernel drops further SYNs, so a connect to it waits
// for the whole timeout (a peer that is not answering, on loopback).
struct FullListener {
  int fd = -1;
  int port = 0;
  std::vector<int> fillers;

  FullListener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(fd, 0), 0);
    socklen_t len = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len);
    port = ntohs(address.sin_port);
    for (int i = 0; i < 2; ++i) {
      const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&address), sizeof address);
      fillers.push_back(c);
    }
  }
  ~FullListener() {
    for (int c : fillers) ::close(c);
    ::close(fd);
  }
};

// An interval timer whose signal interrupts system calls (no SA_RESTART), as a sampling profiler's
// or libFuzzer's does.
struct InterruptingTimer {
  struct sigaction previous{};
  InterruptingTimer() {
    struct sigaction action{};
    action.sa_handler = [](int) {};
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGALRM, &action, &previous);
    itimerval every{{0, 10000}, {0, 10000}};
    ::setitimer(ITIMER_REAL, &every, nullptr);
  }
  ~InterruptingTimer() {
    itimerval off{};
    ::setitimer(ITIMER_REAL, &off, nullptr);
    ::sigaction(SIGALRM, &previous, nullptr);
  }
};

TEST(ConnectTcp, ASignalDuringTheWaitDoesNotEndIt) {
  FullListener listener;
  InterruptingTimer timer;
  try {
    ::close(connect_tcp("127.0.0.1", listener.port, 300));
    FAIL() << "the listener's accept queue is full: the connect should time out";
  } catch (const SessionsError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 300 ms"), std::string::npos) << e.what();
  }
}

TEST(ConnectTcp, NamesTheCauseOfARefusedConnection) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t len = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len);
  const int port = ntohs(address.sin_port);
  ::close(fd);  // bound, never listening, now closed: nothing listens on the port
  try {
    ::close(connect_tcp("127.0.0.1", port, 2000));
    FAIL() << "nothing listens on port " << port;
  } catch (const SessionsError& e) {
    EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::sessions
