// RankSupervisor's messages in the launcher's voice (its ranks) and in `shardscope watch`'s (one
// command of the user's, which is no rank): the texts themselves, then a supervised /bin/sh
// standing in for the user's command that fails, is stopped by SIGINT and outlasts the grace, or
// cannot be started.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <sstream>

#include "launcher/launch_error.hpp"
#include "launcher/rank_supervisor.hpp"
#include "tests/engine/temp_dir.hpp"

extern char** environ;

namespace shardscope::launcher {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const SupervisorVoice kWatch{"shardscope watch", "the command"};

TEST(SupervisorVoice, TheLaunchersWordsSpeakOfRanks) {
  const SupervisorVoice launch;
  EXPECT_EQ(launch.speaker, "shardscope launch");
  EXPECT_EQ(supervised_name(launch, 2), "rank 2");
  EXPECT_EQ(failure_message(launch, 2, 77, 3 << 8), "rank 2 (pid 77) exited with code 3; stopping the other ranks");
  EXPECT_EQ(forwarding_message(launch, SIGINT, 10),
            "received SIGINT: forwarding it to every rank; they get SIGKILL if still running in 10 s (send it again "
            "to kill them now)");
  EXPECT_EQ(kill_now_message(launch, SIGTERM), "received SIGTERM again: killing every rank now (SIGKILL)");
  EXPECT_EQ(grace_over_message(launch, 5), "some ranks were still running 5 s after being told to stop; sending SIGKILL");
  EXPECT_EQ(program_noun(launch), "rank program");
}

TEST(SupervisorVoice, WatchsWordsSpeakOfTheCommand) {
  EXPECT_EQ(supervised_name(kWatch, 0), "the command");
  EXPECT_EQ(failure_message(kWatch, 0, 77, 3 << 8), "the command (pid 77) exited with code 3");
  EXPECT_EQ(forwarding_message(kWatch, SIGTERM, 10),
            "received SIGTERM: forwarding it to the command; it gets SIGKILL if still running in 10 s (send it again "
            "to kill it now)");
  EXPECT_EQ(kill_now_message(kWatch, SIGINT), "received SIGINT again: killing the command now (SIGKILL)");
  EXPECT_EQ(grace_over_message(kWatch, 5), "the command was still running 5 s after being told to stop; sending SIGKILL");
  EXPECT_EQ(program_noun(kWatch), "the command");
}

class WatchedCommand : public ::testing::Test {
 protected:
  // Supervises /bin/sh running `body` in watch's voice; every line of the supervisor's own goes to `own_`.
  SupervisorResult supervise(const std::string& body, double grace_seconds = 2, std::string program = "/bin/sh") {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    SupervisorOptions o;
    RankSpec spec;
    spec.command = {std::move(program), {"sh", "-c", body}, env};
    o.ranks = {spec};
    o.grace_seconds = grace_seconds;
    o.out = &out_;
    o.err = &err_;
    o.voice = kWatch;
    o.on_line = [this](const sessions::LogLine& line) {
      if (line.rank < 0) own_.push_back(line.text);
      if (line.text == "ready") ::kill(::getpid(), SIGINT);  // the user's Ctrl-C, once its trap is set
    };
    return RankSupervisor(std::move(o)).run();
  }

  // No line of the supervisor's calls the command a rank or speaks as `shardscope launch`.
  void expect_no_rank_words() {
    EXPECT_FALSE(contains(err_.str(), "rank")) << err_.str();
    EXPECT_FALSE(contains(err_.str(), "shardscope launch")) << err_.str();
    for (const auto& line : own_) EXPECT_FALSE(contains(line, "rank")) << line;
  }

  std::ostringstream out_, err_;
  std::vector<std::string> own_;
};

TEST_F(WatchedCommand, AFailureNamesTheCommand) {
  const auto result = supervise("exit 3");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.first_failure, "the command exited with code 3");
  EXPECT_TRUE(contains(err_.str(), "shardscope watch: the command (pid " + std::to_string(result.ranks[0].pid) +
                                       ") exited with code 3\n"))
      << err_.str();
  ASSERT_EQ(own_.size(), 1u);
  expect_no_rank_words();
}

TEST_F(WatchedCommand, CtrlCAndTheGracePeriodNameTheCommand) {
  const auto result = supervise("trap '' INT TERM; echo ready; while :; do sleep 0.05; done", 1);
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_TRUE(result.killed_after_grace);
  EXPECT_TRUE(contains(err_.str(), "shardscope watch: received SIGINT: forwarding it to the command; it gets SIGKILL "
                                   "if still running in 1 s (send it again to kill it now)\n"))
      << err_.str();
  EXPECT_TRUE(contains(err_.str(), "shardscope watch: the command was still running 1 s after being told to stop; "
                                   "sending SIGKILL\n"))
      << err_.str();
  expect_no_rank_words();
}

TEST_F(WatchedCommand, ACommandThatCannotStartIsNamed) {
  test::TempDir dir;  // a folder passes watch's check for an executable on PATH, and exec refuses it
  try {
    supervise("", 2, dir.path());
    ADD_FAILURE() << "a folder was started";
  } catch (const LaunchError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot start the command " + dir.path() + ": Permission denied")) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::launcher
