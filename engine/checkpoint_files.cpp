#include "engine/checkpoint_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace shardscope::engine {
namespace {

std::string two_digits(int v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%02d", v);
  return buffer;
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

std::string model_states_file_name(int zero_stage, int dp_rank) {
  if (zero_stage == 3) return "zero_pp_rank_" + std::to_string(dp_rank) + "_mp_rank_" + two_digits(0) + "_model_states.pt";
  return "mp_rank_" + two_digits(0) + "_model_states.pt";
}

std::string optim_states_file_name(bool bf16, int dp_rank) {
  return std::string(bf16 ? "bf16_" : "") + "zero_pp_rank_" + std::to_string(dp_rank) + "_mp_rank_" +
         two_digits(0) + "_optim_states.pt";
}

std::string default_checkpoint_tag(long long global_steps) { return "global_step" + std::to_string(global_steps); }

void write_file_atomically(const std::string& path, const std::vector<char>& bytes) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", temp);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(temp.c_str());
      fail("cannot write", temp);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    fail("cannot flush", temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    fail("cannot rename into", path);
  }
  // Make the rename itself durable.
  const std::string folder = target.has_parent_path() ? target.parent_path().string() : ".";
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string read_latest_tag(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "latest").string();
  if (!std::filesystem::exists(path))
    throw std::runtime_error("no checkpoint tag given and '" + path +
                             "' does not exist: pass a tag, or point at a folder written by save_checkpoint");
  const auto bytes = read_file(path);
  std::string tag(bytes.begin(), bytes.end());
  const auto end = tag.find_last_not_of(" \t\r\n");
  tag = end == std::string::npos ? "" : tag.substr(0, end + 1);
  if (tag.empty()) throw std::runtime_error("'" + path + "' is empty");
  return tag;
}

}  // namespace shardscope::engine
