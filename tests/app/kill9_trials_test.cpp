// kill -9 at seeded random moments (docs/reliability.md, "kill -9"): a 2-rank CPU run of a tiny
// GPT-2 that records every step and saves a checkpoint every other step, killed with SIGKILL in
// one of three places: the launcher, one rank, or a rank in the middle of a checkpoint save.
// After each kill: no process of the run is left, the session file passes PRAGMA
// integrity_check, every rank's recorded steps are contiguous from step 1, the session's status
// is interrupted or failed (the launcher's death is noticed by the next writable open), and the
// checkpoint `latest` names resumes. Each kind runs 7 trials (21 kills in all); a failure names
// the trial and its seed: SHARDSCOPE_KILL9_SEED=<seed> reruns exactly that trial's timing.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::testing {
namespace {

using Clock = std::chrono::steady_clock;

enum class KillTarget { kLauncher, kRank, kRankMidSave };

constexpr int kTrialsPerTarget = 7;
constexpr int kSteps = 200;  // about 8 s of training, far more than any kill waits: the run is always killed

const char* target_name(KillTarget t) {
  return t == KillTarget::kLauncher ? "the launcher" : t == KillTarget::kRank ? "one rank" : "a rank mid-save";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every process whose command line mentions `marker` (the trial's own folder).
std::vector<pid_t> processes_mentioning(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find(marker) != std::string::npos && !test::process_gone(pid, std::chrono::milliseconds(0)))
      found.push_back(pid);
  }
  if (proc) ::closedir(proc);
  return found;
}

bool is_temporary(const std::string& name) { return name.find(".tmp") != std::string::npos; }

// Whether `folder` holds a checkpoint file being written right now (a temporary name).
bool save_in_progress_in(const std::string& folder) {
  bool found = false;
  DIR* d = ::opendir(folder.c_str());
  while (dirent* e = d ? ::readdir(d) : nullptr) found |= is_temporary(e->d_name);
  if (d) ::closedir(d);
  return found;
}

// Blocks until the `nth` checkpoint file is being written in `dir` (a temporary name in it or in
// a tag's folder), through inotify, so the kill lands inside a save. A tag's folder is scanned
// as soon as it is watched: its first file may be created before the watch. False after `seconds`.
bool wait_for_save_in_progress(const std::string& dir, int nth, double seconds) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0 || ::inotify_add_watch(fd, dir.c_str(), IN_CREATE) < 0) return false;
  int writes_seen = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  alignas(inotify_event) char buffer[8192];
  while (writes_seen < nth && Clock::now() < deadline) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    for (char* p = buffer; p < buffer + n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(p);
      const std::string name = event->len ? event->name : "";
      if (event->mask & IN_ISDIR) {
        ::inotify_add_watch(fd, (dir + "/" + name).c_str(), IN_CREATE);
        writes_seen += save_in_progress_in(dir + "/" + name) ? 1 : 0;
      } else if (is_temporary(name)) {
        ++writes_seen;
      }
      p += sizeof(inotify_event) + event->len;
    }
  }
  ::close(fd);
  return writes_seen >= nth;
}

// What one trial found; empty `failure` when every promise held.
struct TrialOutcome {
  bool killed = false;
  std::string failure;
  std::string summary;  ///< what the trial saw, one line
};

class Kill9Trial {
 public:
  Kill9Trial(KillTarget target, std::uint64_t seed)
      : target_(target), seed_(seed), rng_(seed), stage_(std::uniform_int_distribution<int>(0, 3)(rng_)) {
    ::mkdir(dir_.file("ckpt").c_str(), 0700);  // watched for saves before the run starts
    std::ofstream(dir_.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
        "steps_per_print": 1, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
        "zero_optimization": {"stage": )" << stage_ << "}}";
  }

  TrialOutcome run() {
    TrialOutcome outcome;
    {
      RunningCli launcher(launch_args(), dir_);
      if (launcher.pid() <= 0) return {false, "the launcher did not start", ""};
      outcome.killed = kill_at_random_moment(launcher);
      if (!launcher.wait_for(60)) outcome.failure = "the launcher did not exit within 60 s of the kill";
    }
    if (outcome.failure.empty()) outcome.failure = check_no_process_left();
    if (outcome.failure.empty()) outcome.failure = check_session();
    if (outcome.failure.empty()) outcome.failure = check_latest_resumes();
    outcome.summary = "seed " + std::to_string(seed_) + ", ZeRO stage " + std::to_string(stage_) +
                      (outcome.killed ? ", SIGKILL landed" : ", no SIGKILL") + "; sessions: " + seen_ +
                      "; latest: " + (latest_.empty() ? "none" : latest_ + " resumed");
    return outcome;
  }

 private:
  std::vector<std::string> model_args() const {
    return {"--config", dir_.file("ds.json"), "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2",
            "--vocab", "64", "--seq-len", "16", "--device", "cpu"};
  }

  std::vector<std::string> launch_args() const {
    std::vector<std::string> args{"launch", "--master_port", std::to_string(test::free_port()), "--num_procs", "2",
                                  "--session", dir_.file("runs.db"), "--"};
    const auto model = model_args();
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(), {"--steps", std::to_string(kSteps), "--save", dir_.file("ckpt"), "--save-every", "2"});
    return args;
  }

  // Picks the moment from the seed; true when the SIGKILL hit a live run.
  bool kill_at_random_moment(RunningCli& launcher) {
    const bool ranks_up = launcher.wait_until(
        [](const std::string&, const std::string& err) { return rank_pid(err, 1) > 0; }, 60);
    if (!ranks_up) return false;
    const int rank = std::uniform_int_distribution<int>(0, 1)(rng_);
    const pid_t rank_process = rank_pid(launcher.err(), rank);
    if (target_ == KillTarget::kRankMidSave) {
      if (!wait_for_save_in_progress(dir_.file("ckpt"), std::uniform_int_distribution<int>(1, 10)(rng_), 60))
        return false;
      return ::kill(rank_process, SIGKILL) == 0;
    }
    // One kill in four during the start-up (rendezvous, model build), the others while training
    // and saving, from the first printed step on.
    const bool during_startup = std::uniform_int_distribution<int>(0, 3)(rng_) == 0;
    if (!during_startup &&
        !launcher.wait_until([](const std::string& out, const std::string&) { return out.find("step=") != std::string::npos; }, 60))
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, during_startup ? 500 : 1500)(rng_)));
    return ::kill(target_ == KillTarget::kLauncher ? launcher.pid() : rank_process, SIGKILL) == 0;
  }

  std::string check_no_process_left() const {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    std::vector<pid_t> left = processes_mentioning(dir_.file(""));
    while (!left.empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      left = processes_mentioning(dir_.file(""));
    }
    if (left.empty()) return "";
    for (pid_t pid : left) ::kill(pid, SIGKILL);
    return std::to_string(left.size()) + " process(es) of the run were left running, e.g. pid " +
           std::to_string(left[0]);
  }

  std::string check_session() {
    seen_ = "none";
    if (!dir_.exists("runs.db")) return "";  // killed before the collector's first commit
    seen_.clear();
    sessions::Store store = sessions::Store::open(dir_.file("runs.db"));  // writable: marks a dead writer's session
    const std::string integrity = store.db().query_text("PRAGMA integrity_check");
    if (integrity != "ok") return "PRAGMA integrity_check: " + integrity;
    for (const auto& info : sessions::list_sessions(store)) {
      seen_ += (seen_.empty() ? "" : ", ") + info.status + " at step " + (info.last_step ? std::to_string(*info.last_step) : "-");
      if (info.status != "interrupted" && info.status != "failed")
        return "session status is '" + info.status + "', expected interrupted or failed";
      sessions::Statement steps(store.db(), "SELECT rank, step FROM steps WHERE session_id = ? ORDER BY rank, step");
      steps.bind(1, info.id);
      std::int64_t rank = -1, expected = 1;
      while (steps.step()) {
        if (steps.int64(0) != rank) rank = steps.int64(0), expected = 1;
        if (steps.int64(1) != expected)
          return "rank " + std::to_string(rank) + " recorded step " + std::to_string(steps.int64(1)) +
                 " where step " + std::to_string(expected) + " was expected (steps not contiguous)";
        ++expected;
      }
    }
    return "";
  }

  std::string check_latest_resumes() {
    const std::string tag = read_text(dir_.file("ckpt/latest"));
    if (tag.empty()) return "";  // killed before the first save completed
    latest_ = tag;
    const std::int64_t saved = std::atoll(tag.substr(tag.find_first_of("0123456789")).c_str());
    // One rank resumes the two ranks' checkpoint (ZeRO checkpoints reshard) one step further.
    std::vector<std::string> args{"train"};
    const auto model = model_args();
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(), {"--load", dir_.file("ckpt"), "--steps", std::to_string(saved + 1)});
    const ProcessResult r = run_cli(args);
    if (r.exit_code != 0) return "resuming from latest (" + tag + ") failed with exit " + std::to_string(r.exit_code) + ": " + r.err;
    return "";
  }

  KillTarget target_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
  int stage_;
  std::string seen_, latest_;
  test::TempDir dir_;
};

std::uint64_t base_seed() {
  const char* text = std::getenv("SHARDSCOPE_KILL9_SEED");
  return text && *text ? std::strtoull(text, nullptr, 10) : 20261201;
}

void run_trials(KillTarget target) {
  const bool one_seed = std::getenv("SHARDSCOPE_KILL9_SEED") != nullptr;
  int kills = 0;
  for (int i = 0; i < (one_seed ? 1 : kTrialsPerTarget); ++i) {
    const std::uint64_t seed = base_seed() + static_cast<std::uint64_t>(target) * 1000 + static_cast<std::uint64_t>(i);
    const TrialOutcome outcome = Kill9Trial(target, one_seed ? base_seed() : seed).run();
    EXPECT_TRUE(outcome.failure.empty()) << "kill -9 of " << target_name(target) << ", trial " << i << " (seed "
                                         << (one_seed ? base_seed() : seed) << "): " << outcome.failure
                                         << "\nrerun it with SHARDSCOPE_KILL9_SEED=" << (one_seed ? base_seed() : seed);
    kills += outcome.killed ? 1 : 0;
    std::cout << "[kill -9] " << target_name(target) << ", trial " << i << ": " << outcome.summary << "\n";
  }
  EXPECT_EQ(kills, one_seed ? 1 : kTrialsPerTarget) << "some trials ended before their SIGKILL landed";
}

TEST(Kill9Trials, KillingTheLauncherLosesNothingCommitted) { run_trials(KillTarget::kLauncher); }
TEST(Kill9Trials, KillingOneRankLosesNothingCommitted) { run_trials(KillTarget::kRank); }
TEST(Kill9Trials, KillingARankMidSaveKeepsLatestResumable) { run_trials(KillTarget::kRankMidSave); }

}  // namespace
}  // namespace shardscope::testing
