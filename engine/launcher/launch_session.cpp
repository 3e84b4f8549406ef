#include "engine/launcher/launch_session.hpp"

#include <iostream>

#include "engine/launcher/launch_error.hpp"
#include "sessions/collector.hpp"
#include "sessions/event_sink.hpp"

namespace shardscope::engine::launcher {

LaunchSession::LaunchSession(const std::string& db_path) : db_path_(db_path), uid_(sessions::new_session_uid()) {
  sessions::CollectorOptions options;
  options.db_path = db_path;
  // A rank closing its connection at the end is the normal case; only trouble is worth a line.
  options.log = [](sessions::CollectorLogLevel level, const std::string& text) {
    if (level != sessions::CollectorLogLevel::kInfo) std::cerr << "shardscope collector: " << text << std::endl;
  };
  try {
    collector_ = std::make_unique<sessions::Collector>(options);
    collector_->start();
  } catch (const std::exception& e) {
    throw LaunchError(LaunchError::Kind::kUsage, "--session " + db_path + ": " + e.what());
  }
  sessions::TcpSinkOptions tcp;
  tcp.host = "127.0.0.1";
  tcp.port = collector_->port();
  tcp.session_uid = uid_;
  tcp.rank = -1;  // the launcher itself
  sink_ = std::make_unique<sessions::TcpEventSink>(tcp);
}

LaunchSession::~LaunchSession() {
  try {
    close();
  } catch (...) {
  }
}

std::string LaunchSession::collector_address() const { return collector_->address(); }

void LaunchSession::send(const sessions::Event& event) {
  if (broken_ || !sink_) return;
  try {
    sink_->send(event);
  } catch (const std::exception& e) {
    broken_ = true;
    std::cerr << "shardscope launch: warning: the session " << db_path_ << " stopped recording: " << e.what()
              << "\n";
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

}  // namespace shardscope::engine::launcher
