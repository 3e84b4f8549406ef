#pragma once
// A pickle reader for checkpoints, in the spirit of torch.load(weights_only=True): it builds
// only an allow-list of types and executes nothing. A GLOBAL outside the list is refused at once
// with its name; REDUCE, NEWOBJ and BUILD are interpreted for the allowed callables only.
//
// The allow-list is what torch.save and DeepSpeed 0.19.7 put in a checkpoint:
//   containers   collections.OrderedDict, collections.Counter, builtins.set/frozenset, torch.Size
//   tensors      torch._utils._rebuild_tensor_v2/_rebuild_tensor/_rebuild_parameter(_with_state),
//                torch._tensor._rebuild_from_type_v2 (with torch.Tensor or Parameter), the
//                torch.<Type>Storage classes of persistent ids ('storage', class, key, location, n)
//   scalars      torch.device, torch dtypes, _codecs.encode and builtins.bytearray (bytes)
//   DeepSpeed    runtime.fp16.loss_scaler.LossScaler and DynamicLossScaler (read as their
//                attribute dict), runtime.zero.config.ZeroStageEnum (read as its int),
//                utils.tensor_fragment.fragment_address (read as its fields)
// Python 2 names (__builtin__, copy_reg) are mapped as pickle does for protocol 2.
//
// It is a parser of untrusted input, so it is bounded: every opcode consumes input and creates
// at most a constant number of values, so memory and time are linear in the pickle's size; the
// memo is a hash map (an index of 2^32 allocates nothing), integers wider than 64 bits and
// lengths beyond the input are refused, and nothing recurses (values form an arena, see
// pickle_tree.hpp).

#include <cstddef>
#include <string>

#include "checkpoints/pickle_tree.hpp"

namespace shardscope::checkpoints {

/// Parses `size` bytes of pickle. Throws CheckpointError (damaged) naming `file`, the byte offset
/// and what is wrong: a refused global (with its name), an unsupported opcode, a truncated input.
PickleTree read_pickle(const char* data, std::size_t size, const std::string& file);

}  // namespace shardscope::checkpoints
