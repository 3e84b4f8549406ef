#pragma once
// DeepSpeed's checkpoint layout (runtime/engine.py, checkpoint/constants.py) and atomic file I/O:
// dir/latest names the tag; dir/<tag>/ holds mp_rank_00_model_states.pt (stages 0-2) or one
// zero_pp_rank_<dp>_mp_rank_00_model_states.pt per rank (stage 3), and one
// [bf16_]zero_pp_rank_<dp>_mp_rank_00_optim_states.pt per rank under ZeRO or bf16. The .pt files
// are torch.save-compatible pickles (torch::pickle_save), so Python's torch.load reads them.

#include <string>
#include <vector>

namespace shardscope::engine {

/// "mp_rank_00_model_states.pt", or "zero_pp_rank_<dp>_mp_rank_00_model_states.pt" at stage 3.
std::string model_states_file_name(int zero_stage, int dp_rank);
/// "zero_pp_rank_<dp>_mp_rank_00_optim_states.pt", prefixed "bf16_" in bf16 training.
std::string optim_states_file_name(bool bf16, int dp_rank);
/// DeepSpeed's default tag: "global_step<N>".
std::string default_checkpoint_tag(long long global_steps);

/// Writes `bytes` to `path` through a temporary file in the same folder, fsync and rename, so a
/// crash leaves either the old file or the new one, never half of one.
void write_file_atomically(const std::string& path, const std::vector<char>& bytes);
/// Reads a whole file; throws std::runtime_error naming it when it cannot.
std::vector<char> read_file(const std::string& path);
/// The tag in dir/latest (trimmed); throws std::runtime_error naming the file when absent.
std::string read_latest_tag(const std::string& dir);

}  // namespace shardscope::engine
