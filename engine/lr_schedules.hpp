#pragma once
// DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py), as pure functions of
// the batch iteration. The engine steps a schedule once per optimizer step that was not skipped,
// as DeepSpeed does; `last_batch_iteration` starts at -1 and is what checkpoints save.

#include <memory>
#include <optional>
#include <string>

namespace shardscope::engine {

enum class WarmupType { kLog, kLinear };

struct WarmupLrParams {
  double warmup_min_lr = 0.0;
  std::optional<double> warmup_max_lr;  ///< nullopt = the optimizer's lr (DeepSpeed 0.19)
  long long warmup_num_steps = 1000;
  WarmupType warmup_type = WarmupType::kLog;
};

struct WarmupDecayLrParams {
  WarmupLrParams warmup;  ///< warmup_max_lr nullopt = 0.001, WarmupDecayLR's default
  long long total_num_steps = 0;  ///< required
};

struct WarmupCosineLrParams {
  long long total_num_steps = 0;  ///< required
  double warmup_min_ratio = 0.0;
  long long warmup_num_steps = 1000;
  double cos_min_ratio = 0.0001;
  WarmupType warmup_type = WarmupType::kLog;
};

struct OneCycleParams {
  double cycle_min_lr = 0;  ///< required
  double cycle_max_lr = 0;  ///< required
  double decay_lr_rate = 0.0;
  double cycle_first_step_size = 2000;
  std::optional<double> cycle_second_step_size;  ///< nullopt = cycle_first_step_size
  long long decay_step_size = 0;
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8;
  double cycle_max_mom = 0.9;
  double decay_mom_rate = 0.0;
};

struct LrRangeTestParams {
  double lr_range_test_min_lr = 1e-3;
  double lr_range_test_step_size = 2000;
  double lr_range_test_step_rate = 1.0;
  bool lr_range_test_staircase = false;
};

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  /// DeepSpeed's type name ("WarmupLR", ...).
  virtual std::string name() const = 0;
  /// The learning rate at `iteration` (-1 = before the first step()).
  virtual double lr_at(long long iteration) const = 0;
  /// beta1 / momentum at `iteration` where the schedule cycles it (OneCycle), else nullopt.
  virtual std::optional<double> momentum_at(long long /*iteration*/) const { return std::nullopt; }
  /// beta2 the schedule forces (OneCycle writes betas = (momentum, 0.99)), else nullopt.
  virtual std::optional<double> beta2() const { return std::nullopt; }

  /// Advances one batch iteration, as scheduler.step() does.
  void step() { ++last_batch_iteration_; }
  double current_lr() const { return lr_at(last_batch_iteration_); }
  std::optional<double> current_momentum() const { return momentum_at(last_batch_iteration_); }
  long long last_batch_iteration() const { return last_batch_iteration_; }
  void set_last_batch_iteration(long long iteration) { last_batch_iteration_ = iteration; }

 private:
  long long last_batch_iteration_ = -1;
};

/// The warmup fraction gamma in [0, 1] shared by WarmupLR, WarmupDecayLR and WarmupCosineLR.
double warmup_gamma(long long iteration, long long warmup_num_steps, WarmupType type);

std::unique_ptr<LrSchedule> make_warmup_lr(const WarmupLrParams& params, double optimizer_lr);
std::unique_ptr<LrSchedule> make_warmup_decay_lr(const WarmupDecayLrParams& params, double optimizer_lr);
std::unique_ptr<LrSchedule> make_warmup_cosine_lr(const WarmupCosineLrParams& params, double optimizer_lr);
std::unique_ptr<LrSchedule> make_one_cycle(const OneCycleParams& params);
std::unique_ptr<LrSchedule> make_lr_range_test(const LrRangeTestParams& params);
/// No scheduler block: the optimizer's lr, constant.
std::unique_ptr<LrSchedule> make_constant_lr(double optimizer_lr);

}  // namespace shardscope::engine
