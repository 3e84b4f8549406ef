#include "estimator/json_document.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "configs/input_file.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

long line_of(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string plain_message(const char* what) {
  std::string message = what;
  const auto bracket = message.find("] ");
  return message.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos ? message.substr(bracket + 2)
                                                                                   : message;
}

// The key whose value starts at `offset` ("...\"rope_theta\": 1e999"), or "" when the value is in
// an array or the text does not look like that.
std::string key_before(const std::string& text, std::size_t offset) {
  std::size_t i = std::min(offset, text.size());
  while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
  if (i == 0 || text[i - 1] != ':') return "";
  --i;
  while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
  if (i == 0 || text[i - 1] != '"') return "";
  const std::size_t close = i - 1;
  const std::size_t open = text.rfind('"', close == 0 ? 0 : close - 1);
  if (open == std::string::npos || open == close) return "";
  return text.substr(open + 1, close - open - 1);
}

[[noreturn]] void throw_number_overflow(const std::string& text, const std::string& source,
                                        const std::string& what, const std::string& message) {
  // "number overflow parsing '1e999'": find that token to name the line and the key.
  const auto first = message.find('\''), last = message.rfind('\'');
  const std::string token = first != std::string::npos && last > first ? message.substr(first + 1, last - first - 1) : "";
  const std::size_t at = token.empty() ? std::string::npos : text.find(token);
  std::string where = source;
  std::string key;
  if (at != std::string::npos) {
    where += ":" + std::to_string(line_of(text, at));
    key = key_before(text, at);
  }
  throw EstimatorError(where + ": the number " + (token.empty() ? std::string("in the ") + what : token) +
                       (key.empty() ? "" : " of key '" + key + "'") +
                       " is beyond the range of a 64-bit float (about 1.8e308); write a finite value");
}

}  // namespace

std::string read_input_text(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  try {
    return configs::read_input_file(path, what, max_bytes);
  } catch (const configs::InputFileError& e) {
    throw EstimatorError(e.what());
  }
}

nlohmann::json parse_json_document(const std::string& text, const std::string& source, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; users look for a line.
    throw EstimatorError(source + ":" + std::to_string(line_of(text, e.byte)) + ": the " + what +
                         " is not valid JSON (" + plain_message(e.what()) + ")");
  } catch (const nlohmann::json::out_of_range& e) {
    throw_number_overflow(text, source, what, plain_message(e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw EstimatorError(source + ": the " + what + " cannot be read as JSON (" + plain_message(e.what()) + ")");
  }
}

}  // namespace shardscope::estimator
