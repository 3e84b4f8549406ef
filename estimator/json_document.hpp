#pragma once
// Parsing the JSON files the estimator reads (a Hugging Face config.json, a safetensors header or
// index) with one set of messages: a syntax error names the file and line, a number beyond a
// double's range (1e999) names the file, line and key, instead of nlohmann's raw exception text.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace shardscope::estimator {

/// The whole of `path` through configs::read_input_file (regular files only, at most `max_bytes`),
/// its InputFileError turned into EstimatorError, the estimator's one error type.
std::string read_input_text(const std::string& path, const std::string& what, std::uint64_t max_bytes);

/// Parses `text`, read from `source` (a file name, used in messages) holding `what` ("config.json",
/// "safetensors header"); throws EstimatorError saying what is wrong, where and how to fix it.
nlohmann::json parse_json_document(const std::string& text, const std::string& source, const std::string& what);

}  // namespace shardscope::estimator
