#include "engine/lr_schedules.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace shardscope::engine {
namespace {

constexpr double kPi = 3.14159265358979323846;

// DeepSpeed clamps the warmup length to at least 2 so log(warmup_num_steps) is never zero.
long long clamp_warmup(long long steps) {
  if (steps <= 0)
    throw std::invalid_argument("warmup_num_steps must be a positive integer, got " + std::to_string(steps));
  return std::max<long long>(2, steps);
}

class WarmupLr : public LrSchedule {
 public:
  WarmupLr(const WarmupLrParams& p, double optimizer_lr)
      : min_lr_(p.warmup_min_lr),
        delta_lr_(p.warmup_max_lr.value_or(optimizer_lr) - p.warmup_min_lr),
        warmup_steps_(clamp_warmup(p.warmup_num_steps)),
        type_(p.warmup_type) {}
  std::string name() const override { return "WarmupLR"; }
  double lr_at(long long it) const override {
    // Before the first step DeepSpeed puts min_lr into the optimizer.
    if (it < 0) return min_lr_;
    return min_lr_ + delta_lr_ * gamma(it);
  }

 protected:
  virtual double gamma(long long it) const {
    return it < warmup_steps_ ? warmup_gamma(it, warmup_steps_, type_) : 1.0;
  }
  double min_lr_, delta_lr_;
  long long warmup_steps_;
  WarmupType type_;
};

class WarmupDecayLr : public WarmupLr {
 public:
  WarmupDecayLr(const WarmupDecayLrParams& p, double optimizer_lr)
      : WarmupLr(p.warmup, optimizer_lr), total_steps_(p.total_num_steps) {
    if (total_steps_ <= 0) throw std::invalid_argument("WarmupDecayLR needs total_num_steps > 0");
  }
  std::string name() const override { return "WarmupDecayLR"; }

 private:
  double gamma(long long it) const override {
    if (it < warmup_steps_) return warmup_gamma(it, warmup_steps_, type_);
    return std::max(0.0, static_cast<double>(total_steps_ - it) /
                             std::max(1.0, static_cast<double>(total_steps_ - warmup_steps_)));
  }
  long long total_steps_;
};

class WarmupCosineLr : public LrSchedule {
 public:
  WarmupCosineLr(const WarmupCosineLrParams& p, double optimizer_lr)
      : p_(p), warmup_steps_(clamp_warmup(p.warmup_num_steps)), base_lr_(optimizer_lr) {
    if (p.total_num_steps <= 0) throw std::invalid_argument("WarmupCosineLR needs total_num_steps > 0");
  }
  std::string name() const override { return "WarmupCosineLR"; }
  double lr_at(long long it) const override {
    if (it < 0) return 0.0;  // DeepSpeed returns [0.0] before the first step
    return base_lr_ * ratio(it);
  }

 private:
  double ratio(long long it) const {
    if (it < warmup_steps_) {
      const double r = warmup_gamma(it, warmup_steps_, p_.warmup_type);
      return p_.warmup_min_ratio + r * (1.0 - p_.warmup_min_ratio);
    }
    const double real_last = static_cast<double>(it - warmup_steps_ + 1);
    const double real_total = static_cast<double>(p_.total_num_steps - warmup_steps_);
    const double cosine = (1.0 + std::cos(kPi * real_last / real_total)) / 2.0;
    return std::max(0.0, p_.cos_min_ratio + (1.0 - p_.cos_min_ratio) * cosine);
  }
  WarmupCosineLrParams p_;
  long long warmup_steps_;
  double base_lr_;
};

class OneCycle : public LrSchedule {
 public:
  explicit OneCycle(const OneCycleParams& p) : p_(p) {
    const double second = p.cycle_second_step_size.value_or(p.cycle_first_step_size);
    total_size_ = p.cycle_first_step_size + second;
    step_ratio_ = p.cycle_first_step_size / total_size_;
    // DeepSpeed skips the post-cycle decay when decay_step_size is 0 (and the lr decay when
    // decay_lr_rate is 0): lr stays at cycle_min_lr, momentum at cycle_max_mom.
    skip_lr_decay_ = p.decay_step_size == 0 || p.decay_lr_rate == 0.0;
    skip_mom_decay_ = p.decay_step_size == 0;
  }
  std::string name() const override { return "OneCycle"; }
  std::optional<double> beta2() const override {
    return p_.cycle_momentum ? std::optional<double>(0.99) : std::nullopt;
  }
  double lr_at(long long it) const override {
    if (it < 0) return p_.cycle_min_lr;
    if (static_cast<double>(it) < total_size_)
      return p_.cycle_min_lr + (p_.cycle_max_lr - p_.cycle_min_lr) * scale_factor(it);
    if (skip_lr_decay_) return p_.cycle_min_lr;
    const double interval = (static_cast<double>(it) - total_size_ + 1) / p_.decay_step_size;
    return p_.cycle_min_lr / (1.0 + p_.decay_lr_rate * interval);
  }
  std::optional<double> momentum_at(long long it) const override {
    if (!p_.cycle_momentum) return std::nullopt;
    if (it < 0) return p_.cycle_min_mom;  // DeepSpeed puts min_moms into the optimizer first
    if (static_cast<double>(it) < total_size_)
      return p_.cycle_max_mom - (p_.cycle_max_mom - p_.cycle_min_mom) * scale_factor(it);
    if (skip_mom_decay_) return p_.cycle_max_mom;
    const double interval = (static_cast<double>(it) - total_size_ + 1) / p_.decay_step_size;
    return p_.cycle_max_mom * (1.0 + p_.decay_mom_rate * interval);
  }

 private:
  double scale_factor(long long it) const {
    const double batch = static_cast<double>(it + 1);
    const double cycle = std::floor(1.0 + batch / total_size_);
    const double x = 1.0 + batch / total_size_ - cycle;
    return x <= step_ratio_ ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
  }
  OneCycleParams p_;
  double total_size_ = 0, step_ratio_ = 0;
  bool skip_lr_decay_ = true, skip_mom_decay_ = true;
};

class LrRangeTest : public LrSchedule {
 public:
  explicit LrRangeTest(const LrRangeTestParams& p) : p_(p) {
    if (p.lr_range_test_step_size <= 0)
      throw std::invalid_argument("lr_range_test_step_size must be > 0");
  }
  std::string name() const override { return "LRRangeTest"; }
  double lr_at(long long it) const override {
    if (it < 0) return p_.lr_range_test_min_lr;
    double interval = static_cast<double>(it + 1) / p_.lr_range_test_step_size;
    if (p_.lr_range_test_staircase) interval = std::floor(interval);
    return p_.lr_range_test_min_lr * (1.0 + p_.lr_range_test_step_rate * interval);
  }

 private:
  LrRangeTestParams p_;
};

class ConstantLr : public LrSchedule {
 public:
  explicit ConstantLr(double lr) : lr_(lr) {}
  std::string name() const override { return "constant"; }
  double lr_at(long long) const override { return lr_; }

 private:
  double lr_;
};

}  // namespace

double warmup_gamma(long long iteration, long long warmup_num_steps, WarmupType type) {
  const long long steps = clamp_warmup(warmup_num_steps);
  if (iteration >= steps) return 1.0;
  if (type == WarmupType::kLog)
    return std::log(static_cast<double>(iteration + 1)) / std::log(static_cast<double>(steps));
  return static_cast<double>(iteration) / static_cast<double>(steps);
}

std::unique_ptr<LrSchedule> make_warmup_lr(const WarmupLrParams& params, double optimizer_lr) {
  return std::make_unique<WarmupLr>(params, optimizer_lr);
}
std::unique_ptr<LrSchedule> make_warmup_decay_lr(const WarmupDecayLrParams& params, double optimizer_lr) {
  WarmupDecayLrParams p = params;
  if (!p.warmup.warmup_max_lr) p.warmup.warmup_max_lr = 0.001;  // WarmupDecayLR's own default
  return std::make_unique<WarmupDecayLr>(p, optimizer_lr);
}
std::unique_ptr<LrSchedule> make_warmup_cosine_lr(const WarmupCosineLrParams& params, double optimizer_lr) {
  return std::make_unique<WarmupCosineLr>(params, optimizer_lr);
}
std::unique_ptr<LrSchedule> make_one_cycle(const OneCycleParams& params) {
  return std::make_unique<OneCycle>(params);
}
std::unique_ptr<LrSchedule> make_lr_range_test(const LrRangeTestParams& params) {
  return std::make_unique<LrRangeTest>(params);
}
std::unique_ptr<LrSchedule> make_constant_lr(double optimizer_lr) {
  return std::make_unique<ConstantLr>(optimizer_lr);
}

}  // namespace shardscope::engine
