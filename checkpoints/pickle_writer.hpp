#pragma once
// Writes a PickleTree as pickle protocol 2, the way torch.save pickles, using only globals that
// torch.load(weights_only=True) accepts without allow-listing: collections.OrderedDict,
// torch._utils._rebuild_tensor_v2, the torch.<Type>Storage classes, torch.Size, builtins.set
// and _codecs.encode, plus torch dtypes. The one exception is opt-in: a tree holding DeepSpeed's
// LossScaler or DynamicLossScaler object (deepspeed_checkpoint_writer.hpp says when) writes it as
// pickle writes any object. Objects of other classes cannot be written (a logic_error says which).

#include <vector>

#include "checkpoints/pickle_tree.hpp"

namespace shardscope::checkpoints {

/// The pickle of `tree`'s root. Tensors become persistent ids ('storage', <Type>Storage, key,
/// 'cpu', numel) naming the tree's storages; their bytes go into the zip beside it.
std::vector<char> write_pickle(const PickleTree& tree);

}  // namespace shardscope::checkpoints
