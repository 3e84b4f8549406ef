#pragma once
// Environment variables that look like credentials (API tokens, keys, passwords, the run's own
// collector secret) are recorded by name only: their values never reach a session file.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::sessions {

/// What a session stores instead of a credential's value.
inline constexpr const char* kRedactedValue = "<redacted>";

/// Whether `name` reads like a credential: it contains TOKEN, KEY, SECRET, PASSWORD, PASSWD,
/// CREDENTIAL or AUTH, in any case (WANDB_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY, ...).
bool looks_like_credential(std::string_view name);

/// The same pairs with every credential-looking value replaced by kRedactedValue.
std::vector<std::pair<std::string, std::string>> redact_credentials(
    std::vector<std::pair<std::string, std::string>> variables);

}  // namespace shardscope::sessions
