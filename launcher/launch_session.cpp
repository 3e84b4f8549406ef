#include "launcher/launch_session.hpp"

#include <chrono>
#include <iostream>
#include <thread>

#include "launcher/launch_error.hpp"
#include "sessions/collector.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/run_secret.hpp"

namespace shardscope::launcher {
namespace {

// How long a --no_ssh node waits for node 0's collector to listen.
constexpr auto kJoinTimeout = std::chrono::seconds(120);

std::unique_ptr<sessions::Collector> start_collector(const LaunchSessionOptions& o, const std::string& uid,
                                                     const std::string& secret) {
  sessions::CollectorOptions options;
  options.db_path = o.db_path;
  options.session_uid = uid;
  options.secret = secret;
  options.world_size = o.world_size;
  options.bind_host = o.bind_host;
  options.port = o.port;
  options.observe = o.observe;
  // A rank closing its connection at the end is the normal case; only trouble is worth a line.
  options.log = [](sessions::CollectorLogLevel level, const std::string& text) {
    if (level != sessions::CollectorLogLevel::kInfo) std::cerr << "shardscope collector: " << text << std::endl;
  };
  auto collector = std::make_unique<sessions::Collector>(options);
  collector->start();
  return collector;
}

// --no_ssh nodes start in any order: node 0's collector may not listen yet, as a TCPStore client
// waits for its server.
std::unique_ptr<sessions::TcpEventSink> join_when_listening(const sessions::TcpSinkOptions& tcp) {
  const auto deadline = std::chrono::steady_clock::now() + kJoinTimeout;
  while (true) {
    try {
      return std::make_unique<sessions::TcpEventSink>(tcp);
    } catch (const sessions::CollectorNotListeningError&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
}

}  // namespace

LaunchSession::LaunchSession(const LaunchSessionOptions& o) : secret_(o.secret ? *o.secret : sessions::new_run_secret()) {
  sessions::TcpSinkOptions tcp;
  tcp.secret = sessions::rank_key(secret_, -1);  // a launcher proves itself as rank -1
  tcp.rank = -1;
  try {
    if (o.join) {
      where_ = "the collector at " + *o.join;
      address_ = *o.join;
      std::tie(tcp.host, tcp.port) = sessions::parse_host_port(*o.join);
    } else {
      where_ = "--session " + o.db_path;
      collector_ = start_collector(o, sessions::new_session_uid(), secret_);
      address_ = collector_->address();
      tcp.host = o.bind_host;
      tcp.port = collector_->port();
    }
    sink_ = o.join ? join_when_listening(tcp) : std::make_unique<sessions::TcpEventSink>(tcp);
  } catch (const std::exception& e) {
    if (collector_) collector_->stop();
    throw LaunchError(LaunchError::Kind::kUsage, where_ + ": " + e.what());
  }
  uid_ = sink_->session_uid();
}

LaunchSession::~LaunchSession() {
  try {
    close();
  } catch (...) {
  }
}

double LaunchSession::clock_offset_s() const { return collector_ || !sink_ ? 0.0 : sink_->clock_offset_s(); }

void LaunchSession::send(const sessions::Event& event) {
  if (broken_ || !sink_) return;
  try {
    sink_->send(event);
  } catch (const std::exception& e) {
    broken_ = true;
    std::cerr << "shardscope launch: warning: the session (" << where_ << ") stopped recording: " << e.what() << "\n";
  }
}

void LaunchSession::close() {
  if (sink_) {
    try {
      sink_->close();
    } catch (const std::exception& e) {
      if (!broken_) std::cerr << "shardscope launch: warning: " << e.what() << "\n";
    }
    sink_.reset();
  }
  if (collector_) {
    collector_->stop();  // drains every rank's socket and commits what arrived
    collector_.reset();
  }
}

}  // namespace shardscope::launcher
