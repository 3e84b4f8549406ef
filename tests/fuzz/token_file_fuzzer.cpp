// libFuzzer target: the token-file reader (nanoGPT raw uint16/uint32, llm.c's header). Bad input
// must raise DataError (or InputFileError); every token read must lie in the file.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "configs/input_file.hpp"
#include "engine/data/data_error.hpp"
#include "engine/data/token_file.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  static fuzz::MemoryFile file;
  file.write(data, size);
  const engine::TokenFormat formats[] = {engine::TokenFormat::kAuto, engine::TokenFormat::kUint16,
                                         engine::TokenFormat::kUint32};
  try {
    const engine::TokenFile tokens(file.path(), formats[size % 3]);
    const std::int64_t n = tokens.num_tokens();
    if (n < 0 || static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(tokens.bytes_per_token()) > size)
      fuzz::fail("token count beyond the file");
    std::vector<std::int64_t> out(static_cast<std::size_t>(std::min<std::int64_t>(n, 64)) + 1);
    try {
      tokens.read(n, 1, 0, out.data());
      fuzz::fail("a read past the end did not throw");
    } catch (const engine::DataError&) {
    }
    if (n > 0) tokens.read(n - 1, 1, 0, out.data());
    tokens.read(0, static_cast<std::int64_t>(out.size()) - 1, 50257, out.data());  // may find a token >= vocab
  } catch (const engine::DataError&) {
  } catch (const configs::InputFileError&) {
  }
  return 0;
}
