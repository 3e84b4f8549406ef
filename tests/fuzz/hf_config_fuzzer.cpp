// libFuzzer target: the Hugging Face config.json reader of the estimator (and the engine's model
// specs). Bad input must raise EstimatorError, nothing else; a description that comes back must
// be within the estimator's bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "estimator/estimator_error.hpp"
#include "estimator/hf_config.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::estimator;
  const std::string text(reinterpret_cast<const char*>(data), size);
  HfConfigOptions options;
  if (size % 4 == 1) options.layout_override = TransformerLayout::kGpt2;
  if (size % 4 == 2) options.layout_override = TransformerLayout::kGptNeox;
  if (size % 5 == 0) options.seq_len = 2048;
  try {
    const ModelDescription d = describe_hf_config_text(text, "config.json", options);
    if (!(d.total_params > 0 && d.total_params <= kMaxModelParameters))
      shardscope::fuzz::fail("parameter count out of bounds: " + std::to_string(d.total_params));
  } catch (const EstimatorError&) {
  }
  return 0;
}
