#pragma once
// Which environment variables a session records with their values. A session file is shared and
// exported, and a launch hands its ranks whatever `.deepspeed_env` and the shell hold (DB_PASS,
// GITHUB_PAT, a DATABASE_URL with a password), so a name-based deny-list leaks whatever it did
// not think of. The store keeps values only for an allow-list of variables that explain a run
// (NCCL_*, CUDA_*, TORCH_*, OMP_*, ..., kRecordedPrefixes and kRecordedNames below, documented in
// docs/sessions.md), extended by the user with SHARDSCOPE_RECORD_ENV; every other variable is
// stored by name with the value kRedactedValue. Even an allowed variable loses its value when its
// name reads like a credential (HF_TOKEN, SHARDSCOPE_COLLECTOR_SECRET) or its value holds a URL
// with a password (scheme://user:password@host).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::sessions {

/// What a session stores instead of a value it does not record.
inline constexpr const char* kRedactedValue = "<redacted>";

/// The variable holding the user's additions to the allow-list: comma- or space-separated names,
/// a trailing '*' makes a prefix ("MYAPP_*,DATA_ROOT").
inline constexpr const char* kRecordEnvVariable = "SHARDSCOPE_RECORD_ENV";

/// Prefixes whose variables are recorded with their values (NCCL_, CUDA_, TORCH_, OMP_, ...).
const std::vector<std::string>& recorded_prefixes();
/// Whole names recorded with their values (MASTER_ADDR, WORLD_SIZE, LD_LIBRARY_PATH, ...).
const std::vector<std::string>& recorded_names();

/// The allow-list in force: the built-in prefixes and names plus the user's patterns.
struct EnvironmentAllowList {
  std::vector<std::string> prefixes;
  std::vector<std::string> names;

  /// The built-in list plus the entries of `user_patterns` (SHARDSCOPE_RECORD_ENV's syntax).
  static EnvironmentAllowList with_user_patterns(std::string_view user_patterns);
  /// The built-in list plus SHARDSCOPE_RECORD_ENV from this process's environment.
  static EnvironmentAllowList from_environment();
  /// Whether `name` is on the list (case-sensitive, as the environment is).
  bool allows(std::string_view name) const;
};

/// Whether `name` reads like a credential: a word of it contains TOKEN, KEY, SECRET, PASSWORD,
/// PASSWD, CREDENTIAL, AUTH, COOKIE or PRIVATE, or is PASS, PAT, PWD, PW, CRED, CREDS or JWT, in
/// any case (WANDB_API_KEY, DB_PASS, GITHUB_PAT, SLURM_JWT).
bool looks_like_credential(std::string_view name);

/// Whether `value` holds a URL with a password in it ("postgres://user:pw@db/x").
bool holds_url_password(std::string_view value);

/// The same pairs, each value kept only when `allow` lists the name, the name does not read like a
/// credential and the value holds no URL password; otherwise the value is kRedactedValue.
std::vector<std::pair<std::string, std::string>> recorded_environment(
    std::vector<std::pair<std::string, std::string>> variables, const EnvironmentAllowList& allow);

}  // namespace shardscope::sessions
