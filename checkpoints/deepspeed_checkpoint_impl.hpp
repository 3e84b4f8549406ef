#pragma once
// Internal to DeepSpeedCheckpoint: the state shared by its source files
// (deepspeed_checkpoint*.cpp). Not included anywhere else.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "checkpoints/deepspeed_checkpoint.hpp"

namespace shardscope::checkpoints {

struct DeepSpeedCheckpoint::Impl {
  OpenOptions options;
  std::string folder;
  // scan()
  std::string model_file;                              ///< mp_rank_00_model_states.pt, if present
  std::map<int, std::string> zero_model_files;         ///< stage 3 model states by rank
  std::map<bool, std::map<int, std::string>> optim_files;  ///< by bf16 prefix, then rank
  std::vector<std::string> leftovers;                  ///< temporary files of interrupted writes
  bool has_manifest = false;
  // open_model_states()
  std::unique_ptr<TorchFile> states;  ///< rank 0's model states
  // open_optimizer()
  std::vector<std::string> optim_paths;  ///< per saved rank (ZeRO); empty when the optimizer is in the states
  std::unique_ptr<TorchFile> optimizer0;  ///< rank 0's optimizer file
  // read_parameters()
  std::vector<Zero12Group> groups;  ///< ZeRO 1-2 parameter groups
  std::vector<std::string> module_keys;  ///< stage 0: each parameter's key in `module`
  mutable std::set<int> verified;        ///< ranks whose file passed its CRC-32 check

  void scan(const std::string& folder, CheckpointSummary& s);
  void open_model_states(CheckpointSummary& s);
  void open_optimizer(CheckpointSummary& s);
  void read_parameters(CheckpointSummary& s);
  void read_optimizer_summary(CheckpointSummary& s);
  void check_consistency(const CheckpointSummary& s) const;
  RankPart part(int rank, const std::string& buffer, const CheckpointSummary& s) const;
  std::optional<LossScalerSnapshot> loss_scaler() const;

  std::string path(const std::string& name) const;
  std::string interruption_note() const;
  /// The optimizer dict of rank 0: `optimizer_state_dict` of its optimizer file, or `optimizer`
  /// of the model states at stage 0.
  PickleRef optimizer_dict() const;
  /// The dict holding the per-group or per-parameter optimizer state ("state" keyed by index).
  PickleRef state_of(const PickleRef& optimizer, const CheckpointSummary& s) const;

  // checks (deepspeed_checkpoint_checks.cpp)
  void check_manifest(const CheckpointSummary& s) const;
  void check_without_manifest(const CheckpointSummary& s) const;
  void verify_crc(const std::string& name, const ManifestFile& expected) const;
};

/// "a, b, c": file names in a message.
std::string comma_joined(const std::vector<std::string>& items);

}  // namespace shardscope::checkpoints
