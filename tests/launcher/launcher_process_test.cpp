// The launcher with real processes: /bin/sh scripts stand in for `shardscope train`, so every
// behaviour (environment, failure handling, signals, logs, the session) is checked in seconds and
// without LibTorch. After each run no rank, nor anything a rank started, may be left.
#include <gtest/gtest.h>

#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "launcher/launch_error.hpp"
#include "launcher/local_launcher.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::launcher {
namespace {

using test::free_port;
using test::process_gone;

using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class LauncherProcess : public ::testing::Test {
 protected:
  // A request for `ranks` CPU ranks running `body` as a /bin/sh script (DIR is the test folder).
  LaunchRequest request(int ranks, const std::string& body) {
    const std::string script = dir_.file("rank.sh");
    std::ofstream(script) << "DIR=" << dir_.file("") << "\n" << body << "\n";
    LaunchRequest r;
    r.program = "/bin/sh";
    r.program_args = {script};
    r.train_args = {"--steps", "3"};
    r.num_procs = ranks;
    r.master_port = free_port();
    r.grace_seconds = 2;
    return r;
  }

  // Runs the ranks under a RankSupervisor that calls `on_line` for every line.
  SupervisorResult supervise(const LaunchRequest& r, std::function<void(const sessions::LogLine&)> on_line = {}) {
    SupervisorOptions o;
    o.ranks = make_launch_plan(r).ranks;
    o.grace_seconds = r.grace_seconds;
    o.out = &out_;
    o.err = &err_;
    o.on_line = std::move(on_line);
    RankSupervisor supervisor(std::move(o));
    auto result = supervisor.run();
    for (const auto& rank : result.ranks) EXPECT_TRUE(process_gone(rank.pid)) << "rank " << rank.rank << " left";
    return result;
  }

  // The pids the ranks' background children wrote to DIR/child_<rank>.
  void expect_children_gone(int ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      std::ifstream in(dir_.file("child_" + std::to_string(rank)));
      pid_t pid = 0;
      ASSERT_TRUE(in >> pid) << "rank " << rank << " did not start its background child";
      EXPECT_TRUE(process_gone(pid)) << "the background child of rank " << rank << " (pid " << pid << ") was left";
    }
  }

  test::TempDir dir_;
  std::ostringstream out_, err_;
};

TEST_F(LauncherProcess, EveryRankGetsItsEnvironmentAndPrefixedOutput) {
  const auto result = supervise(request(2, R"(echo "RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE \
LOCAL_SIZE=$LOCAL_SIZE CROSS=$CROSS_RANK/$CROSS_SIZE MASTER=$MASTER_ADDR ARGS=$*"
echo "note from $RANK" >&2)"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.status, "completed");
  for (int rank = 0; rank < 2; ++rank) {
    const std::string r = std::to_string(rank);
    EXPECT_TRUE(contains(out_.str(), "[rank " + r + "] RANK=" + r + " LOCAL_RANK=" + r +
                                         " WORLD_SIZE=2 LOCAL_SIZE=2 CROSS=0/1 MASTER=127.0.0.1 "
                                         "ARGS=--steps 3 --device cpu\n"))
        << out_.str();
    EXPECT_TRUE(contains(err_.str(), "[rank " + r + "] note from " + r + "\n")) << err_.str();
    EXPECT_EQ(result.ranks[static_cast<std::size_t>(rank)].exit_code, 0);
  }
}

TEST_F(LauncherProcess, OneRankPrintsWithoutPrefix) {
  const auto result = supervise(request(1, "echo \"hello $RANK of $WORLD_SIZE\""));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(out_.str(), "hello 0 of 1\n");
}

TEST_F(LauncherProcess, AFailingRankStopsTheOthersAndIsReportedFirst) {
  const auto started = Clock::now();
  const auto result = supervise(request(3, R"(sleep 300 &
echo $! > "$DIR/child_$RANK"
if [ "$RANK" = 2 ]; then sleep 0.2; echo "loading shard 2" >&2; echo "RuntimeError: shard 2 is corrupt" >&2; exit 3; fi
sleep 30)"));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - started).count(), 5.0);  // not the 30 s sleep
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.status, "failed");
  ASSERT_TRUE(result.first_failed_rank);
  EXPECT_EQ(*result.first_failed_rank, 2);
  EXPECT_EQ(result.first_failure, "rank 2 exited with code 3");
  EXPECT_EQ(result.first_failure_stderr,
            (std::vector<std::string>{"loading shard 2", "RuntimeError: shard 2 is corrupt"}));
  for (int rank : {0, 1}) {
    EXPECT_TRUE(result.ranks[static_cast<std::size_t>(rank)].stopped_by_launcher);
    EXPECT_EQ(result.ranks[static_cast<std::size_t>(rank)].exit_code, -SIGTERM);
  }
  EXPECT_FALSE(result.ranks[2].stopped_by_launcher);
  EXPECT_TRUE(contains(err_.str(), "shardscope launch: rank 2 (pid ")) << err_.str();
  EXPECT_TRUE(contains(err_.str(), "exited with code 3; stopping the other ranks")) << err_.str();
  expect_children_gone(3);
}

TEST_F(LauncherProcess, ARankKilledBySignalGives128PlusSignal) {
  const auto result = supervise(request(2, R"(if [ "$RANK" = 1 ]; then sleep 0.2; kill -9 $$; fi
sleep 30)"));
  EXPECT_EQ(result.exit_code, 137);
  ASSERT_TRUE(result.first_failed_rank);
  EXPECT_EQ(*result.first_failed_rank, 1);
  EXPECT_EQ(result.first_failure, "rank 1 was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(result.ranks[1].exit_code, -9);
  EXPECT_EQ(result.ranks[0].exit_code, -SIGTERM);
}

TEST_F(LauncherProcess, ARankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  auto r = request(2, R"(if [ "$RANK" = 1 ]; then sleep 0.2; exit 1; fi
trap '' TERM
sleep 300 &
echo $! > "$DIR/child_$RANK"
while :; do sleep 0.05; done)");
  r.grace_seconds = 1;
  const auto started = Clock::now();
  const auto result = supervise(r);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  EXPECT_GE(seconds, 1.0);
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.killed_after_grace);
  EXPECT_EQ(result.ranks[0].exit_code, -SIGKILL);
  EXPECT_TRUE(contains(err_.str(), "still running 1 s after being told to stop; sending SIGKILL")) << err_.str();
  std::ofstream(dir_.file("child_1")) << 999999999;  // rank 1 started none: a pid that cannot exist
  expect_children_gone(2);
}

// Each rank prints "ready" once its trap is set; then the test signals its own process (the launcher).
std::function<void(const sessions::LogLine&)> signal_when_ready(int ranks, int signal, int* ready) {
  return [=](const sessions::LogLine& line) {
    if (line.text == "ready" && ++*ready == ranks) ::kill(::getpid(), signal);
  };
}

TEST_F(LauncherProcess, CtrlCIsForwardedToEveryRankAndExits130) {
  int ready = 0;
  const auto result = supervise(request(2, R"(trap 'echo "rank $RANK got INT"; exit 0' INT
sleep 300 &
echo $! > "$DIR/child_$RANK"
echo ready
while :; do sleep 0.05; done)"),
                                signal_when_ready(2, SIGINT, &ready));
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_EQ(result.status, "interrupted");
  EXPECT_EQ(result.interrupt_signal, SIGINT);
  EXPECT_FALSE(result.first_failed_rank);
  EXPECT_TRUE(contains(out_.str(), "[rank 0] rank 0 got INT")) << out_.str();
  EXPECT_TRUE(contains(out_.str(), "[rank 1] rank 1 got INT")) << out_.str();
  EXPECT_TRUE(contains(err_.str(), "received SIGINT: forwarding it to every rank")) << err_.str();
  expect_children_gone(2);
}

TEST_F(LauncherProcess, SigtermExits143AndASecondSignalKillsAtOnce) {
  int ready = 0;
  auto r = request(2, R"(trap '' INT TERM
echo ready
while :; do sleep 0.05; done)");
  r.grace_seconds = 30;
  std::thread second;
  auto on_line = [&, first = signal_when_ready(2, SIGTERM, &ready)](const sessions::LogLine& line) {
    first(line);
    if (ready == 2 && !second.joinable())
      second = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::kill(::getpid(), SIGTERM);
      });
  };
  const auto started = Clock::now();
  const auto result = supervise(r, on_line);
  if (second.joinable()) second.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - started).count(), 10.0);  // not the 30 s grace
  EXPECT_EQ(result.exit_code, 143);
  EXPECT_EQ(result.status, "interrupted");
  EXPECT_TRUE(result.killed_after_grace);
  EXPECT_EQ(result.ranks[0].exit_code, -SIGKILL);
  EXPECT_TRUE(contains(err_.str(), "received SIGTERM again: killing every rank now")) << err_.str();
}

TEST_F(LauncherProcess, EachRankLogGoesToItsOwnFile) {
  auto r = request(2, R"(echo "out of $RANK"
echo "err of $RANK" >&2)");
  r.each_rank_log_dir = dir_.file("logs/nested");
  const auto outcome = launch_local(r, out_, err_);
  EXPECT_EQ(outcome.exit_code, 0);
  DIR* logs = ::opendir(dir_.file("logs/nested").c_str());
  ASSERT_NE(logs, nullptr);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(logs))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  ::closedir(logs);
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);
  const std::regex deepspeed_name(R"(\d{14}_rank([01])\.log)");
  for (std::size_t rank = 0; rank < 2; ++rank) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(names[rank], m, deepspeed_name)) << names[rank];
    EXPECT_EQ(m[1].str(), std::to_string(rank));
    std::ifstream in(dir_.file("logs/nested/" + names[rank]));
    std::stringstream text;
    text << in.rdbuf();
    std::string r = std::to_string(rank);
    EXPECT_TRUE(contains(text.str(), "out of " + r + "\n")) << text.str();  // unprefixed, both streams
    EXPECT_TRUE(contains(text.str(), "err of " + r + "\n")) << text.str();
  }
  std::ofstream(dir_.file("a_file")) << "x";
  r.each_rank_log_dir = dir_.file("a_file");
  EXPECT_THROW(launch_local(r, out_, err_), LaunchError);
}

TEST_F(LauncherProcess, ABusyPortStartsNothing) {
  auto r = request(2, "touch \"$DIR/started_$RANK\"");
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(r.master_port));
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  try {
    launch_local(r, out_, err_);
    ADD_FAILURE() << "a busy MASTER_PORT was accepted";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.kind(), LaunchError::Kind::kEnvironment);
    EXPECT_TRUE(contains(e.what(), "MASTER_PORT " + std::to_string(r.master_port))) << e.what();
    EXPECT_TRUE(contains(e.what(), "--master_port")) << e.what();
  }
  ::close(fd);
  EXPECT_FALSE(dir_.exists("started_0"));
  EXPECT_FALSE(dir_.exists("started_1"));
}

TEST_F(LauncherProcess, AMissingProgramIsNamed) {
  auto r = request(2, "");
  r.program = dir_.file("no-such-program");
  r.session_db = dir_.file("runs.db");
  r.environment_report = [] { return sessions::EnvironmentReport{}; };
  try {
    launch_local(r, out_, err_);
    ADD_FAILURE() << "a missing program was started";
  } catch (const LaunchError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot start rank program " + r.program + ": No such file or directory"))
        << e.what();
  }
  auto store = sessions::Store::open(dir_.file("runs.db"));
  const auto all = sessions::list_sessions(store);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, "failed");  // not left "running"
}

TEST_F(LauncherProcess, TheSessionRecordsRanksLinesAndExitCodes) {
  auto r = request(2, R"(echo "secret=${#SHARDSCOPE_COLLECTOR_SECRET} key=$(head -c 64 <&$SHARDSCOPE_COLLECTOR_KEY_FD | wc -c) args=$*"
if [ "$RANK" = 1 ]; then sleep 0.3; echo "error: rank 1 lost its data" >&2; exit 4; fi
echo "warning: rank 0 is slow" >&2
sleep 30)");
  r.session_db = dir_.file("runs.db");
  r.name = "sh-run";
  r.command_line = {"shardscope", "launch", "--num_procs", "2"};
  r.environment_report = [] {
    sessions::EnvironmentReport report;
    report.host.hostname = "test-host";
    return report;
  };
  const auto outcome = launch_local(r, out_, err_);
  EXPECT_EQ(outcome.exit_code, 4);
  ASSERT_EQ(outcome.session_uid.size(), 32u);
  // The rank's key (64 hex digits) reaches it on descriptor 3, not in its environment, not on its
  // command line.
  EXPECT_TRUE(contains(out_.str(), "[rank 0] secret=0 key=64 args=--steps 3 --device cpu --collector 127.0.0.1:"))
      << out_.str();

  auto store = sessions::Store::open(dir_.file("runs.db"));
  const auto id = sessions::find_session(store, outcome.session_uid);
  const auto detail = sessions::load_session(store, id);
  EXPECT_EQ(detail.info.name, "sh-run");
  EXPECT_EQ(detail.info.status, "failed");
  EXPECT_EQ(detail.info.world_size, 2);
  EXPECT_EQ(detail.command_line, r.command_line);
  ASSERT_TRUE(detail.environment);
  EXPECT_EQ(detail.environment->host.hostname, "test-host");
  ASSERT_EQ(detail.ranks.size(), 2u);
  for (std::size_t rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(detail.ranks[rank].info.rank, static_cast<int>(rank));
    EXPECT_EQ(detail.ranks[rank].info.pid, outcome.result.ranks[rank].pid);
    EXPECT_EQ(detail.ranks[rank].info.device, "cpu");
  }
  EXPECT_EQ(detail.ranks[1].exit_code, 4);
  EXPECT_EQ(detail.ranks[0].exit_code, -SIGTERM);
  const auto errors = sessions::load_logs(store, id, 1, sessions::LogLevel::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].text, "error: rank 1 lost its data");
  const auto rank0 = sessions::load_logs(store, id, 0);
  ASSERT_EQ(rank0.size(), 2u);
  for (const auto& line : rank0)
    EXPECT_EQ(line.level, contains(line.text, "warning") ? sessions::LogLevel::kWarning : sessions::LogLevel::kInfo)
        << line.text;
  bool launcher_reported = false;
  for (const auto& line : sessions::load_logs(store, id, -1, sessions::LogLevel::kError))
    launcher_reported |= contains(line.text, "rank 1 exited with code 4 (the first rank to fail)");
  EXPECT_TRUE(launcher_reported);
}

}  // namespace
}  // namespace shardscope::launcher
