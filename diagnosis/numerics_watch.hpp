#pragma once
// The live side of the numerics findings (numerics.hpp): the launcher keeps the latest steps of
// every rank and, when a step arrives, says what is new: a NaN/Inf loss once per run of bad steps,
// an overflow streak once it reaches its length and again if the loss scale then collapses to its
// minimum, a loss spike once. The fp16 minimum comes from the run's own config (RunStart).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "diagnosis/numerics.hpp"
#include "sessions/events.hpp"

namespace shardscope::diagnosis {

class NumericsWatch {
 public:
  /// `history`: steps kept (the spike window and an overflow streak fit in it).
  explicit NumericsWatch(NumericsOptions options = {}, std::size_t history = 200);

  /// Takes in steps, and the run's start (its config's fp16.min_loss_scale).
  void observe(const sessions::Event& event);
  /// What is new since the last call.
  std::vector<sessions::Finding> check(double now);

 private:
  bool is_new(const sessions::Finding& f);

  NumericsOptions options_;
  std::size_t history_;
  std::map<std::int64_t, std::vector<sessions::StepMetrics>> steps_;  ///< step -> every rank's metrics
  bool changed_ = false;
  std::map<std::string, std::vector<sessions::Finding>> reported_;  ///< kind -> the ones reported
};

/// fp16.min_loss_scale of a resolved config's JSON; `fallback` when it has none (DeepSpeed's is 1).
double min_loss_scale_of(const std::string& config_json, double fallback = 1);

}  // namespace shardscope::diagnosis
