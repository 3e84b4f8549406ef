#pragma once
// What flat_optimizer.cpp and flat_optimizer_torch.cpp share: the tensor-operations path of
// apply_optimizer_step and the lookup of the gradient piece that holds a whole tensor.

#include "engine/flat_optimizer.hpp"

namespace shardscope::engine {

/// The tensor-operations backend of apply_optimizer_step (any device; the tests' reference).
void step_tensor_ops(const OptimizerSettings& settings, const OptimizerBuffers& buffers, const GradientPieces& grads,
                     const StepArgs& args);
/// The piece holding all of `segment`; throws when none does (a tensor split across pieces).
const GradientPiece& gradient_piece_holding(const GradientPieces& grads, const TensorSegment& segment);

}  // namespace shardscope::engine
