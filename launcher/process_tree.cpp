#include "launcher/process_tree.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>

namespace shardscope::launcher {
namespace {

// The parent pid in /proc/<pid>/stat: the field after the ")" that ends the command name.
pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 4 >= text.size()) return -1;
  char state = 0;
  int parent = -1;
  if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &parent) != 2 || state == 'Z') return -1;
  return parent;
}

std::map<pid_t, std::vector<pid_t>> children_by_parent() {
  std::map<pid_t, std::vector<pid_t>> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    if (const pid_t parent = parent_of(static_cast<pid_t>(pid)); parent > 0)
      out[parent].push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

void reap_children() {
  int status = 0;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
}

}  // namespace

bool become_child_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

std::vector<pid_t> descendants_of(pid_t root) {
  const auto children = children_by_parent();
  std::vector<pid_t> out, frontier{root};
  while (!frontier.empty()) {
    const pid_t pid = frontier.back();
    frontier.pop_back();
    if (auto it = children.find(pid); it != children.end())
      for (pid_t child : it->second) {
        out.push_back(child);
        frontier.push_back(child);
      }
  }
  return out;
}

std::size_t end_descendants(double grace_seconds) {
  const pid_t self = ::getpid();
  auto left = descendants_of(self);
  const std::size_t found = left.size();
  for (pid_t pid : left) ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    reap_children();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = descendants_of(self);
  }
  for (pid_t pid : left) ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && !descendants_of(self).empty(); ++i) {
    reap_children();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reap_children();
  return found;
}

}  // namespace shardscope::launcher
