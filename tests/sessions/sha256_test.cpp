// SHA-256 against the FIPS 180-2 examples and HMAC-SHA256 against RFC 4231's test cases 1-7;
// the run secret's file checks.
#include "sessions/sha256.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "sessions/credentials.hpp"
#include "sessions/errors.hpp"
#include "sessions/run_secret.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

std::string hmac_hex(const std::string& key, const std::string& data) { return digest_hex(hmac_sha256(key, data)); }

TEST(Sha256, Fips180Examples) {
  EXPECT_EQ(digest_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a', fed in uneven pieces so block boundaries fall everywhere.
  Sha256 h;
  const std::string piece(997, 'a');
  std::size_t fed = 0;
  while (fed + piece.size() <= 1000000) {
    h.update(piece);
    fed += piece.size();
  }
  h.update(std::string(1000000 - fed, 'a'));
  EXPECT_EQ(digest_hex(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HmacSha256, Rfc4231TestCases) {
  EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  EXPECT_EQ(hmac_hex(key4, std::string(50, '\xcd')), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(hmac_hex(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32), "a3b6167473100ee06e0c796c2955552b");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_hex(std::string(131, '\xaa'),
                     "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  Sha256Digest a = sha256("x"), b = a;
  EXPECT_TRUE(constant_time_equal(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(constant_time_equal(a, b));
}

TEST(RunSecret, IsRandomAndAFileMustBePrivateAndLongEnough) {
  const std::string first = new_run_secret(), second = new_run_secret();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_NE(first, second);
  const std::string path = testing::temp_path("secret");
  std::ofstream(path) << "0123456789abcdef0123456789abcdef\n";
  ::chmod(path.c_str(), 0644);
  try {
    read_secret_file(path);
    FAIL() << "a world-readable secret was accepted";
  } catch (const SessionsError& e) {
    EXPECT_NE(std::string(e.what()).find("has mode 0644, so other users can read it; make it private with chmod 600"),
              std::string::npos)
        << e.what();
  }
  ::chmod(path.c_str(), 0600);
  EXPECT_EQ(read_secret_file(path), "0123456789abcdef0123456789abcdef");
  std::ofstream(path) << "short\n";
  EXPECT_THROW(read_secret_file(path), SessionsError);
  EXPECT_THROW(read_secret_file("/"), SessionsError);
  ::unlink(path.c_str());
  ::setenv(kCollectorSecretVariable, "from-the-launcher", 1);
  EXPECT_EQ(take_secret_from_environment(), "from-the-launcher");
  EXPECT_EQ(std::getenv(kCollectorSecretVariable), nullptr) << "nothing the rank starts may inherit it";
  EXPECT_FALSE(take_secret_from_environment().has_value());
}

// Issue 31: a rank's key arrives on a pipe, never in its environment (/proc/<pid>/environ).
TEST(RunSecret, ARanksKeyIsReadFromItsDescriptorWhichIsThenClosed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string key = rank_key("run-secret-0123456789abcdef0123456789", 1);
  ASSERT_EQ(::write(fds[1], key.data(), key.size()), static_cast<ssize_t>(key.size()));
  ::close(fds[1]);
  ::setenv(kCollectorKeyFdVariable, std::to_string(fds[0]).c_str(), 1);
  ::setenv(kCollectorSecretVariable, "ignored-when-a-descriptor-is-named", 1);
  EXPECT_EQ(take_secret_from_environment(), key);
  EXPECT_EQ(std::getenv(kCollectorKeyFdVariable), nullptr);
  EXPECT_EQ(std::getenv(kCollectorSecretVariable), nullptr);
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1) << "the descriptor is closed once read";
  ::setenv(kCollectorKeyFdVariable, "3x", 1);
  EXPECT_THROW(take_secret_from_environment(), SessionsError);
  EXPECT_FALSE(take_secret_from_environment().has_value());
}

TEST(Credentials, NamesThatLookLikeCredentialsLoseTheirValues) {
  for (const char* name : {"WANDB_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "my_passwd", "GH_AUTH",
                           "DB_PASS", "GITHUB_PAT", "MYSQL_PWD", "SHARDSCOPE_COLLECTOR_SECRET", "SLURM_JWT"})
    EXPECT_TRUE(looks_like_credential(name)) << name;
  for (const char* name : {"NCCL_DEBUG", "PYTHONPATH", "UCX_TLS", "OMP_NUM_THREADS", "PATH", "LD_LIBRARY_PATH"})
    EXPECT_FALSE(looks_like_credential(name)) << name;
}

// Issue 31: DB_PASS, GITHUB_PAT and a DATABASE_URL with a password passed a name deny-list.
TEST(Credentials, OnlyTheAllowListKeepsItsValues) {
  const auto allow = EnvironmentAllowList::with_user_patterns("");
  const auto kept = recorded_environment({{"NCCL_DEBUG", "INFO"},
                                          {"CUDA_LAUNCH_BLOCKING", "1"},
                                          {"MASTER_ADDR", "10.0.0.1"},
                                          {"DB_PASS", "hunter2"},
                                          {"GITHUB_PAT", "ghp_x"},
                                          {"DATABASE_URL", "postgres://me:hunter2@db/x"},
                                          {"HF_TOKEN", "hf_x"},
                                          {"PYTHONPATH", "https://me:pw@example.org/a"},
                                          {"MY_SETTING", "plain"}},
                                         allow);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"NCCL_DEBUG", "INFO"},          {"CUDA_LAUNCH_BLOCKING", "1"},  {"MASTER_ADDR", "10.0.0.1"},
      {"DB_PASS", kRedactedValue},     {"GITHUB_PAT", kRedactedValue}, {"DATABASE_URL", kRedactedValue},
      {"HF_TOKEN", kRedactedValue},    {"PYTHONPATH", kRedactedValue}, {"MY_SETTING", kRedactedValue}};
  EXPECT_EQ(kept, expected);
}

TEST(Credentials, TheUserExtendsTheAllowListByNameAndPrefix) {
  const auto allow = EnvironmentAllowList::with_user_patterns("MY_SETTING, MYAPP_*,,");
  EXPECT_TRUE(allow.allows("MY_SETTING"));
  EXPECT_TRUE(allow.allows("MYAPP_LEVEL"));
  EXPECT_FALSE(allow.allows("MY_SETTING2"));
  EXPECT_FALSE(allow.allows("OTHER"));
  EXPECT_TRUE(allow.allows("NCCL_DEBUG")) << "the built-in list stays";
  // A user's name that reads like a credential still loses its value.
  const auto kept = recorded_environment({{"MYAPP_TOKEN", "t"}, {"MYAPP_LEVEL", "3"}}, allow);
  EXPECT_EQ(kept[0].second, kRedactedValue);
  EXPECT_EQ(kept[1].second, "3");
  ::setenv(kRecordEnvVariable, "FROM_ENV", 1);
  EXPECT_TRUE(EnvironmentAllowList::from_environment().allows("FROM_ENV"));
  ::unsetenv(kRecordEnvVariable);
  EXPECT_FALSE(EnvironmentAllowList::from_environment().allows("FROM_ENV"));
}

TEST(Credentials, UrlPasswordsAreFoundWhereverTheyAre) {
  EXPECT_TRUE(holds_url_password("postgres://user:pw@host/db"));
  EXPECT_TRUE(holds_url_password("a;b https://u:p@h"));
  EXPECT_FALSE(holds_url_password("https://example.org/a@b:c"));
  EXPECT_FALSE(holds_url_password("https://user@host/"));
  EXPECT_FALSE(holds_url_password("/usr/lib:/opt/lib"));
}

}  // namespace
}  // namespace shardscope::sessions
