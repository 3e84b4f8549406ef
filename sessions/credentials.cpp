#include "sessions/credentials.hpp"

#include <algorithm>
#include <cctype>

namespace shardscope::sessions {

bool looks_like_credential(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  static const char* const kWords[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"};
  return std::any_of(std::begin(kWords), std::end(kWords),
                     [&](const char* word) { return upper.find(word) != std::string::npos; });
}

std::vector<std::pair<std::string, std::string>> redact_credentials(
    std::vector<std::pair<std::string, std::string>> variables) {
  for (auto& [name, value] : variables)
    if (looks_like_credential(name)) value = kRedactedValue;
  return variables;
}

}  // namespace shardscope::sessions
