#include "launcher/rank_output.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <ostream>
#include <utility>

#include "launcher/launch_error.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using sessions::unix_now;

LaunchError log_error(const std::string& what, int error) {
  return LaunchError(LaunchError::Kind::kEnvironment, "--enable_each_rank_log: " + what + ": " + std::strerror(error));
}

void make_directories(const std::string& dir) {
  for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      throw log_error("unable to create directory " + prefix + " for each rank log", errno);
    if (slash == std::string::npos) return;
  }
}

}  // namespace

std::vector<std::string> LineSplitter::append(const char* data, std::size_t size) {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      if (!pending_.empty() && pending_.back() == '\r') pending_.pop_back();
      lines.push_back(std::move(pending_));
      pending_.clear();
    } else {
      pending_.push_back(data[i]);
      if (pending_.size() >= max_line_) {
        lines.push_back(std::move(pending_));
        pending_.clear();
      }
    }
  }
  return lines;
}

std::optional<std::string> LineSplitter::finish() {
  if (pending_.empty()) return std::nullopt;
  std::string rest = std::move(pending_);
  pending_.clear();
  if (!rest.empty() && rest.back() == '\r') rest.pop_back();
  return rest;
}

sessions::LogLevel classify_stderr_line(const std::string& line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto first = lower.find_first_not_of(" \t");
  if (first != std::string::npos && lower.compare(first, 7, "warning") == 0) return sessions::LogLevel::kWarning;
  static const char* const kErrorWords[] = {"error",         "exception",          "traceback", "fatal",
                                            "terminate called", "segmentation fault", "what():",   "aborted",
                                            "core dumped"};
  for (const char* word : kErrorWords)
    if (lower.find(word) != std::string::npos) return sessions::LogLevel::kError;
  return sessions::LogLevel::kWarning;
}

std::string prepare_rank_log_dir(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0 && !S_ISDIR(info.st_mode))
    throw LaunchError(LaunchError::Kind::kEnvironment,
                      "--enable_each_rank_log " + dir + " should not be a file, it should be a directory");
  make_directories(dir);
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &local);
  return stamp;
}

std::string rank_log_path(const std::string& dir, const std::string& prefix, int rank) {
  return dir + (dir.empty() || dir.back() == '/' ? "" : "/") + prefix + "_rank" + std::to_string(rank) + ".log";
}

RankOutput::RankOutput(int rank, RankOutputOptions options) : rank_(rank), options_(std::move(options)) {
  if (options_.log_path) {
    // A log is a stream the user tails while the run goes on, so it is written in place.
    log_ = std::fopen(options_.log_path->c_str(), "we");
    if (!log_) throw log_error("cannot write " + *options_.log_path, errno);
  }
}

RankOutput::~RankOutput() {
  if (log_) std::fclose(log_);
}

RankOutput::RankOutput(RankOutput&& other) noexcept
    : rank_(other.rank_),
      options_(std::move(other.options_)),
      out_lines_(std::move(other.out_lines_)),
      err_lines_(std::move(other.err_lines_)),
      log_(std::exchange(other.log_, nullptr)),
      tail_(std::move(other.tail_)) {}

void RankOutput::write(bool from_stderr, const char* data, std::size_t size) {
  for (const auto& line : (from_stderr ? err_lines_ : out_lines_).append(data, size)) emit(from_stderr, line);
}

void RankOutput::finish(bool from_stderr) {
  if (auto rest = (from_stderr ? err_lines_ : out_lines_).finish()) emit(from_stderr, *rest);
  if (log_) std::fflush(log_);
}

void RankOutput::emit(bool from_stderr, const std::string& line) {
  std::ostream* stream = from_stderr ? options_.err : options_.out;
  if (stream) {
    if (options_.world_size > 1) *stream << "[rank " << rank_ << "] ";
    *stream << line << '\n' << std::flush;
  }
  if (log_) {
    std::fwrite(line.data(), 1, line.size(), log_);
    std::fputc('\n', log_);
    std::fflush(log_);  // a user tails it; a crash of the launcher must not lose the last lines
  }
  if (from_stderr) {
    tail_.push_back(line);
    if (tail_.size() > options_.tail_lines) tail_.pop_front();
  }
  if (options_.on_line)
    options_.on_line(sessions::LogLine{rank_, unix_now(),
                                       from_stderr ? classify_stderr_line(line) : sessions::LogLevel::kInfo, line});
}

}  // namespace shardscope::launcher
