// libFuzzer target: the safetensors header reader, on a whole file (8-byte length, JSON header,
// data). Bad input must raise EstimatorError (or InputFileError), nothing else.
#include <cstddef>
#include <cstdint>

#include "configs/input_file.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/safetensors_header.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  static fuzz::MemoryFile file;
  file.write(data, size);
  try {
    const estimator::ModelDescription d = estimator::describe_safetensors(file.path());
    if (!(d.total_params > 0 && d.total_params <= estimator::kMaxModelParameters))
      fuzz::fail("parameter count out of bounds");
  } catch (const estimator::EstimatorError&) {
  } catch (const configs::InputFileError&) {
  }
  return 0;
}
