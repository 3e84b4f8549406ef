#include "configs/config_model.hpp"

namespace shardscope::configs {

const char* to_string(OffloadDevice device) {
  switch (device) {
    case OffloadDevice::kCpu: return "cpu";
    case OffloadDevice::kNvme: return "nvme";
    case OffloadDevice::kNone: break;
  }
  return "none";
}

const char* to_string(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::kFp16: return "fp16";
    case PrecisionMode::kBf16: return "bf16";
    case PrecisionMode::kFp32: break;
  }
  return "fp32";
}

const char* to_string(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdam: return "Adam";
    case OptimizerKind::kAdamW: return "AdamW";
    case OptimizerKind::kLamb: return "Lamb";
    case OptimizerKind::kLion: return "Lion";
    case OptimizerKind::kAdagrad: return "Adagrad";
    case OptimizerKind::kMuon: return "Muon";
    case OptimizerKind::kMuAdam: return "MuAdam";
    case OptimizerKind::kMuAdamW: return "MuAdamW";
    case OptimizerKind::kMuSgd: return "MuSGD";
    case OptimizerKind::kTorch: return "torch";
    case OptimizerKind::kNone: break;
  }
  return "none";
}

const char* to_string(SchedulerKind kind) {
  switch (kind) {
    case SchedulerKind::kLRRangeTest: return "LRRangeTest";
    case SchedulerKind::kOneCycle: return "OneCycle";
    case SchedulerKind::kWarmupLR: return "WarmupLR";
    case SchedulerKind::kWarmupDecayLR: return "WarmupDecayLR";
    case SchedulerKind::kWarmupCosineLR: return "WarmupCosineLR";
    case SchedulerKind::kTorch: return "torch";
    case SchedulerKind::kNone: break;
  }
  return "none";
}

}  // namespace shardscope::configs
