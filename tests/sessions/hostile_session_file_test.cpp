// A session file given by someone else (issue 22's campaign): a FIFO or a directory as --db,
// a damaged file (opened read-only with a warning, or refused), a damaged table (one short line),
// a session whose writer was killed (marked interrupted), exports that never clobber, and names
// with escape sequences shown escaped.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>

#include "sessions/atomic_output.hpp"
#include "sessions/display_text.hpp"
#include "sessions/errors.hpp"
#include "sessions/session_export.hpp"
#include "sessions/session_liveness.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using testing::read_bytes;
using testing::temp_path;
using testing::write_bytes;

std::string filled_store(const std::string& stem, const std::string& name = "run") {
  const auto path = temp_path(stem);
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  std::vector<Event> events{testing::sample_run_start(name, 1, "{}")};
  for (auto& e : testing::sample_steps(1, 50)) events.push_back(e);
  writer.write("uid-" + stem, events);
  store.checkpoint();
  return path;
}

std::string error_text(const std::string& path, StoreOpenOptions options = {}) {
  try {
    Store::open(path, options);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

TEST(HostileSessionFile, AFifoIsRefusedByTypeWithoutBlocking) {
  const auto path = temp_path("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_text(path), path + " is a FIFO (named pipe), not a session store file; pass the sessions file a run "
                                     "wrote (--db)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  ::unlink(path.c_str());
}

TEST(HostileSessionFile, ACharacterDeviceIsRefusedByType) {
  EXPECT_NE(error_text("/dev/null").find("/dev/null is a character device, not a session store file"), std::string::npos);
}

// Overwrites pages in the middle of the file, as a disk error or another tool would.
std::string damaged_store() {
  const auto path = filled_store("damaged");
  auto bytes = read_bytes(path);
  for (std::size_t i = 2 * 4096; i + 4096 < bytes.size(); i += 3 * 4096)
    for (std::size_t j = 0; j < 512; ++j) bytes[i + j] = static_cast<char>(0xA5 ^ j);
  write_bytes(path, bytes);
  return path;
}

TEST(HostileSessionFile, ADamagedFileIsOpenedReadOnlyWithTheDamageNamedUnderWarn) {
  const auto path = damaged_store();
  const std::string before = read_bytes(path);
  StoreOpenOptions options;
  options.integrity = IntegrityCheck::kWarn;
  Store store = Store::open(path, options);
  EXPECT_TRUE(store.read_only());
  EXPECT_FALSE(store.damage().empty());
  EXPECT_EQ(damage_warning(store).rfind(path + " is corrupted (SQLite quick_check: ", 0), 0u) << damage_warning(store);
  EXPECT_EQ(read_bytes(path), before) << "a damaged file must not be written";
}

TEST(HostileSessionFile, ADamagedFileIsRefusedUnderRefuseTheDefault) {
  const auto path = damaged_store();
  const std::string message = error_text(path);
  EXPECT_EQ(message.rfind(path + " is corrupted (SQLite quick_check: ", 0), 0u) << message;
  EXPECT_NE(message.find("nothing was written to it"), std::string::npos);
}

TEST(HostileSessionFile, ADamagedTableGivesOneShortLineNotTheWholeStatement) {
  const auto path = filled_store("dropped");
  {
    SqliteDb db(path, false, false);
    db.exec("ALTER TABLE step_stats RENAME COLUMN loss_n TO something_else");  // what the summary reads
  }
  Store store = Store::open(path);
  try {
    summarize_session(store, list_sessions(store).at(0).id);
    FAIL() << "a damaged table was read";
  } catch (const StoreError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
    EXPECT_LT(message.size(), 300u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("its tables are damaged (SQLite: no such column: loss"), std::string::npos) << message;
    EXPECT_NE(message.find("Restore it from a copy"), std::string::npos) << message;
  }
}

std::size_t session_count(const std::string& path) {
  StoreOpenOptions read_only;
  read_only.read_only = true;
  try {
    Store store = Store::open(path, read_only);
    return list_sessions(store).size();
  } catch (const StoreError&) {
    return 0;  // not created yet
  }
}

TEST(HostileSessionFile, ASessionWhoseWriterDiedIsMarkedInterruptedAtTheNextWritableOpen) {
  const auto path = temp_path("orphan");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a writer that records its start, then is killed before its RunEnd
    Store store = Store::open_or_create(path);
    StoreWriter(store).write("orphan-uid", {testing::sample_run_start("orphan", 1, "{}")});
    ::pause();
  }
  for (int i = 0; i < 500 && session_count(path) == 0; ++i) ::usleep(10000);
  {
    Store alive = Store::open(path);
    EXPECT_EQ(alive.sessions_marked_interrupted(), 0) << "a live writer's session must stay running";
    EXPECT_EQ(list_sessions(alive).at(0).status, "running");
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  {
    StoreOpenOptions read_only;
    read_only.read_only = true;
    Store reader = Store::open(path, read_only);
    EXPECT_EQ(list_sessions(reader).at(0).status, "running") << "a read-only open writes nothing";
  }
  Store store = Store::open(path);
  EXPECT_EQ(store.sessions_marked_interrupted(), 1);
  EXPECT_EQ(list_sessions(store).at(0).status, "interrupted");
}

TEST(HostileSessionFile, AWriterOnAnotherHostOrWithoutAStartTimeIsNeverJudgedDead) {
  EXPECT_FALSE(writer_is_gone({"some-other-host", 1, "boot:1"}));
  EXPECT_FALSE(writer_is_gone({this_process_identity().host, 999999999, ""}));
  EXPECT_TRUE(writer_is_gone({this_process_identity().host, this_process_identity().pid, "another-boot:1"}))
      << "a reused pid with another start time is not the writer";
  EXPECT_FALSE(writer_is_gone(this_process_identity()));
}

// Only the session file's own name may not be a link: a folder on the way may be (a home folder
// reached through one), and the file is still created there with mode 0600.
TEST(HostileSessionFile, AFolderOnTheWayThatIsALinkIsFine) {
  const auto real = temp_path("real_folder");
  const auto linked = temp_path("linked_folder");
  ::mkdir(real.c_str(), 0700);
  ::unlink(linked.c_str());
  ASSERT_EQ(::symlink(real.c_str(), linked.c_str()), 0);
  {
    Store store = Store::open_or_create(linked + "/runs.db");
    StoreWriter writer(store);
    writer.write("uid-linked", {testing::sample_run_start("linked", 1, "{}")});
  }
  struct stat st {};
  ASSERT_EQ(::stat((real + "/runs.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  testing::remove_store(real + "/runs.db");
  ::unlink(linked.c_str());
  ::rmdir(real.c_str());
}

// Issue 31: a dangling --db link created the session file at its target with mode 0644.
TEST(HostileSessionFile, AWriterRefusesADanglingALoopingAndAResolvingLink) {
  const auto target = temp_path("link_target");
  ::unlink(target.c_str());
  const auto dangling = temp_path("dangling_db");
  const auto loop = temp_path("loop_db");
  const auto good = filled_store("linked_real");
  const auto resolving = temp_path("resolving_db");
  ASSERT_EQ(::symlink(target.c_str(), dangling.c_str()), 0);
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  ASSERT_EQ(::symlink(good.c_str(), resolving.c_str()), 0);
  for (const auto& [link, what] : {std::pair{dangling, std::string(", which does not exist")},
                                   std::pair{loop, std::string("loops")}, std::pair{resolving, "--db " + good}}) {
    try {
      Store::open_or_create(link);
      ADD_FAILURE() << "a writer opened " << link;
    } catch (const StoreError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(link + " is a symbolic link"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    struct stat st {};
    ASSERT_EQ(::lstat(link.c_str(), &st), 0) << "the link the user gave is kept";
    EXPECT_TRUE(S_ISLNK(st.st_mode));
  }
  struct stat st {};
  EXPECT_NE(::stat(target.c_str(), &st), 0) << "nothing was created at the dangling link's target";
  // A reader may follow a link that resolves; one that loops is named as such.
  StoreOpenOptions read_only;
  read_only.read_only = true;
  Store reader = Store::open(resolving, read_only);
  EXPECT_EQ(list_sessions(reader).size(), 1u);
  EXPECT_NE(error_text(loop, read_only).find("loops"), std::string::npos);
  for (const auto& link : {dangling, loop, resolving}) ::unlink(link.c_str());
}

TEST(HostileSessionFile, AnExportRefusesASymlinkAFifoAndADirectoryAndLeavesThemAlone) {
  const auto path = filled_store("export");
  Store store = Store::open(path);
  const auto ids = std::vector<std::int64_t>{list_sessions(store).at(0).id};
  const auto target = temp_path("victim");
  write_bytes(target, "precious");
  const auto link = temp_path("link");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const auto fifo = temp_path("export_fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [where, kind] : {std::pair{link, "a symbolic link"}, std::pair{fifo, "a FIFO (named pipe)"},
                                    std::pair{std::string("/tmp"), "a directory"}}) {
    try {
      export_json_file(store, ids, where);
      ADD_FAILURE() << "exported onto " << where;
    } catch (const StoreError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_EQ(std::string(e.what()), where + " exists and is " + kind +
                                           "; an export replaces only a regular file: remove it or choose another path");
    }
  }
  EXPECT_EQ(read_bytes(target), "precious");
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ::unlink(link.c_str());
  ::unlink(fifo.c_str());
}

TEST(HostileSessionFile, AnExportReplacesARegularFileWholeWithNoTemporaryLeft) {
  const auto path = filled_store("export_ok");
  Store store = Store::open(path);
  const auto out = temp_path("out_json");
  write_bytes(out, "old");
  const auto result = export_json_file(store, {list_sessions(store).at(0).id}, out);
  EXPECT_EQ(result.files.at(0), out);
  EXPECT_EQ(read_bytes(out).rfind("{\"schema\": \"shardscope.sessions-export/1\"", 0), 0u);
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "exports are private to their owner";
}

TEST(HostileSessionFile, ControlCharactersAreShownEscaped) {
  EXPECT_EQ(escape_control_characters("run\x1b[31m red\x07"), "run\\x1b[31m red\\x07");
  EXPECT_EQ(escape_control_characters("tab\there\nnext"), "tab\\x09here\\x0anext");
  EXPECT_EQ(escape_control_characters("line\nnext", true), "line\nnext");
  EXPECT_EQ(escape_control_characters("C1 \xc2\x9b" "31m"), "C1 \\u009b31m");  // the 8-bit CSI
  EXPECT_EQ(escape_control_characters("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // letters stay
  EXPECT_EQ(escape_control_characters("bad \xff\xfe"), "bad \\xff\\xfe");
  EXPECT_EQ(escape_control_characters("del\x7f"), "del\\x7f");
}

TEST(HostileSessionFile, AnExportOfANameThatIsNotUtf8IsStillValidJson) {
  const auto path = filled_store("bad_utf8", std::string("bad \xff name \x1b[2J"));
  Store store = Store::open(path);
  std::ostringstream out;
  export_json(store, {list_sessions(store).at(0).id}, out);
  EXPECT_NE(out.str().find("bad \\ufffd name \\u001b[2J"), std::string::npos) << out.str().substr(0, 400);
}

}  // namespace
}  // namespace shardscope::sessions
