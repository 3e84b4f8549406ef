#include "aio/fio_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "aio/io_error.hpp"

extern char** environ;

namespace shardscope::aio {
namespace {

struct Captured {
  int status = -1;
  std::string out, err;
};

std::string read_all(int fd) {
  std::string text;
  char chunk[65536];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<std::size_t>(n));
  return text;
}

// Runs argv with stdout and stderr in temporary files (fio's report is small), waits for it.
Captured run_captured(const std::vector<std::string>& argv) {
  char out_name[] = "/tmp/shardscope_fio_outXXXXXX", err_name[] = "/tmp/shardscope_fio_errXXXXXX";
  const int out_fd = ::mkstemp(out_name), err_fd = ::mkstemp(err_name);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("bench io: cannot make temporary files for fio's output");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  std::vector<std::string> storage = argv;
  for (auto& a : storage) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  Captured c;
  if (rc == 0) ::waitpid(pid, &c.status, 0);
  ::lseek(out_fd, 0, SEEK_SET);
  ::lseek(err_fd, 0, SEEK_SET);
  c.out = read_all(out_fd);
  c.err = read_all(err_fd);
  ::close(out_fd);
  ::close(err_fd);
  ::unlink(out_name);
  ::unlink(err_name);
  if (rc != 0) throw std::runtime_error("bench io: cannot start '" + argv[0] + "': " + describe_errno(rc));
  return c;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) text += (text.empty() ? "" : " ") + a;
  return text;
}

double run_pass(const std::string& fio, const FioJob& job, bool write, std::vector<std::string>& command) {
  command = fio_command(fio, job, write);
  const Captured c = run_captured(command);
  if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
    throw std::runtime_error("bench io: fio failed (" + joined(command) + "):\n" + c.err + c.out);
  try {
    return fio_bandwidth_gbps(c.out, write);
  } catch (const std::exception& e) {
    throw std::runtime_error("bench io: " + std::string(e.what()) + " (" + joined(command) + ")");
  }
}

}  // namespace

std::optional<std::string> find_fio() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t begin = 0; begin <= dirs.size();) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(begin, end - begin) + "/fio";
    if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string> fio_command(const std::string& fio, const FioJob& job, bool write) {
  // Each job takes its own contiguous slice of one file, as each of our workers does.
  const std::int64_t per_job = job.io_size / std::max(1, job.jobs);
  return {fio,
          "--name=shardscope_bench_io",
          "--filename=" + job.folder + "/fio_bench.dat",
          "--rw=" + std::string(write ? "write" : "read"),
          "--bs=" + std::to_string(job.block_size),
          "--iodepth=" + std::to_string(job.queue_depth),
          "--numjobs=" + std::to_string(job.jobs),
          "--size=" + std::to_string(per_job),
          "--offset_increment=" + std::to_string(per_job),
          "--ioengine=" + std::string(io_backend_name(job.engine)),
          "--direct=" + std::string(job.direct ? "1" : "0"),
          "--group_reporting",
          "--output-format=json"};
}

FioResult run_fio(const std::string& fio, const FioJob& job) {
  FioResult r;
  r.write_gbps = run_pass(fio, job, true, r.write_command);
  r.read_gbps = run_pass(fio, job, false, r.read_command);
  ::unlink((job.folder + "/fio_bench.dat").c_str());
  return r;
}

double fio_bandwidth_gbps(const std::string& json_text, bool write) {
  // fio may print warnings before the JSON document.
  const auto start = json_text.find('{');
  if (start == std::string::npos) throw std::runtime_error("fio printed no JSON report");
  const auto report = nlohmann::json::parse(json_text.substr(start), nullptr, false);
  const char* part = write ? "write" : "read";
  if (report.is_discarded() || !report.contains("jobs") || report["jobs"].empty() ||
      !report["jobs"][0].contains(part) || !report["jobs"][0][part].contains("bw_bytes"))
    throw std::runtime_error(std::string("fio's JSON report has no jobs[0].") + part + ".bw_bytes");
  return report["jobs"][0][part]["bw_bytes"].get<double>() / 1e9;
}

}  // namespace shardscope::aio
