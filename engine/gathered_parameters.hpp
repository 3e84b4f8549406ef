#pragma once
// DeepSpeed's deepspeed.zero.GatheredParameters: while alive, every parameter of the engine's model
// holds its whole value on every rank (stage 3 gathers them; stages 0-2 always do). With a
// modifier rank, the values that rank holds when the scope ends (it may have changed them) are
// broadcast, written into every rank's partition and into the fp32 master, so training continues
// from them. Collective: every rank must open and close the scope together.

#include <optional>

namespace shardscope::engine {

class Engine;

class GatheredParameters {
 public:
  explicit GatheredParameters(Engine& engine, std::optional<int> modifier_rank = std::nullopt);
  /// Ends the scope (see close()); errors are logged, as a destructor must not throw.
  ~GatheredParameters();
  GatheredParameters(const GatheredParameters&) = delete;
  GatheredParameters& operator=(const GatheredParameters&) = delete;

  /// Ends the scope now: writes back the modifier rank's values, then releases stage-3 parameters.
  /// Throws CommTimeout when a rank does not take part.
  void close();

 private:
  Engine& engine_;
  std::optional<int> modifier_rank_;
  bool open_ = true;
};

}  // namespace shardscope::engine
