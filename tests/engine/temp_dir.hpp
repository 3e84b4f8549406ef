#pragma once
// A temporary directory for one test, made with mkdtemp and removed with nftw. Not
// std::filesystem: libtorch.so (torch 2.11 wheel) exports broken copies of std::filesystem's
// functions, and an executable that lists libtorch before libstdc++ crashes calling them.

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace shardscope::test {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/shardscope_engine_XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    ::nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return std::remove(p); }, 16,
           FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The directory itself.
  const std::string& path() const { return path_; }
  /// The path of `name` inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Whether `name` exists inside the directory.
  bool exists(const std::string& name) const { return ::access(file(name).c_str(), F_OK) == 0; }

 private:
  std::string path_;
};

}  // namespace shardscope::test
