// libFuzzer target: the node agents' channel (launcher/agent_channel.hpp) as an intruder on
// the rendezvous port or a broken transport feeds it (issue 31). The input goes to one codec as an
// unproven connection's (the rendezvous' small frame cap) and to one sealed with fixed keys, fed in
// two pieces split where the first byte says; the text form goes to the token-line parser. Must
// hold: only ChannelError, never more buffered than was fed, every message a JSON object with a
// type, and no sealed message accepted unless its tag verified (the fuzzer cannot forge one, so a
// sealed codec yields none).
#include <cstdint>
#include <string>

#include "launcher/agent_channel.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace shardscope::launcher;

constexpr std::size_t kUnprovenFrameBytes = 16u << 10;  // AgentRendezvous' cap before proof

std::size_t drain(MessageCodec& codec, std::size_t fed) {
  std::size_t messages = 0;
  try {
    while (auto message = codec.next()) {
      if (!message->is_object() || !message->contains("type")) shardscope::fuzz::fail("a message without a type");
      ++messages;
    }
  } catch (const ChannelError&) {
  }
  if (codec.buffered_bytes() > fed) shardscope::fuzz::fail("the codec holds more than it was fed");
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  MessageCodec unproven;
  unproven.set_max_frame_bytes(kUnprovenFrameBytes);
  unproven.feed(bytes, split);
  drain(unproven, size);
  unproven.feed(bytes + split, size - split);
  drain(unproven, size);

  MessageCodec sealed;
  sealed.seal(derive_seal_keys("fuzz-token-0123456789abcdef0123456789", "launcher", "aa", "bb"),
              derive_seal_keys("fuzz-token-0123456789abcdef0123456789", "agent", "aa", "bb"));
  sealed.feed(bytes, size);
  if (drain(sealed, size) != 0) shardscope::fuzz::fail("a sealed frame the fuzzer could not have tagged was accepted");

  parse_agent_token_line(std::string(bytes, size));
  return 0;
}
