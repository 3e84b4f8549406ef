// libFuzzer target: the config parser and the validator, as `shardscope validate` runs them.
// Any input must give diagnostics (or a tree), never a crash, an exception or a sanitizer report;
// a syntax error and a parsed tree are mutually exclusive.
#include <cstddef>
#include <cstdint>
#include <string>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::configs;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const ConfigDocument document = parse_config_text(text, "fuzz.json");
  bool syntax_error = false;
  for (const auto& d : document.parse_diagnostics) syntax_error |= d.code == "syntax-error";
  if (syntax_error == document.root.has_value()) shardscope::fuzz::fail("syntax error and tree disagree");
  ValidateOptions options;
  options.strict = size % 2 == 0;  // both modes, decided by the input so a crash reproduces
  options.world_size = size % 3 == 0 ? std::optional<int>(8) : std::nullopt;
  const ValidationResult result = validate(document, options);
  (void)result;
  return 0;
}
