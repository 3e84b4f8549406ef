// libFuzzer target of the checkpoint reader: one input is one .pt file. It goes through the zip
// reader, the allow-list pickle reader and the tensor reads of checkpoints::TorchFile; then
// through DeepSpeedCheckpoint as a one-file tag (the input is mp_rank_00_model_states.pt, and
// for inputs of odd size also rank 0's optimizer file), which walks DeepSpeed's layout, checks
// the tag and reassembles every buffer; then the pickle reader alone on the same bytes (a
// data.pkl by itself). Anything but a CheckpointError (a crash, a sanitizer report, another
// exception, a hang) is a finding.
//
// Fuzzing: `scripts/fuzz.sh torch_file_fuzzer [SECONDS]` (target torch_file_fuzzer of
// tests/fuzz/CMakeLists.txt: clang, libFuzzer, ASan + UBSan; seeds in corpus/, dictionary
// tests/fuzz/torch_file_fuzzer.dict).
// The ctest target checkpoints_fuzz_replay_tests replays corpus/ and regressions/ through it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/deepspeed_checkpoint.hpp"
#include "checkpoints/pickle_reader.hpp"
#include "checkpoints/torch_file.hpp"

namespace {

using namespace shardscope::checkpoints;

// Walks a value the way the checkpoint reader does (dict entries, list items, tensors), at
// most a few levels deep and a bounded number of nodes.
void walk(const TorchFile& file, const PickleRef& ref, int depth, int& budget) {
  if (depth > 8 || --budget < 0) return;
  switch (ref.kind()) {
    case PickleKind::kDict:
      for (const auto& [key, value] : ref.entries()) walk(file, value, depth + 1, budget);
      break;
    case PickleKind::kList:
    case PickleKind::kTuple:
    case PickleKind::kSet:
      for (const auto& item : ref.items()) walk(file, item, depth + 1, budget);
      break;
    case PickleKind::kTensor:
      file.read_float32(ref.as_tensor());
      break;
    default: break;
  }
}

// The input as a file: a memfd, opened through /proc like any path.
class MemoryFile {
 public:
  MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("torch_file_fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) return;
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
    ok_ = true;
  }
  ~MemoryFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
  bool ok_ = false;
};

// A tag folder whose rank files are links to the input, made once per process.
class OneFileTag {
 public:
  OneFileTag() {
    std::string pattern = (std::filesystem::temp_directory_path() / "torch_file_fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data())) folder_ = pattern;
  }
  ~OneFileTag() {
    std::error_code ec;
    if (!folder_.empty()) std::filesystem::remove_all(folder_, ec);
  }
  /// Points the tag's files at `target`; returns the folder ("" if it could not be made).
  std::string link(const std::string& target, bool with_optimizer) {
    if (folder_.empty()) return "";
    for (const char* name : {"mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt"}) {
      const std::string path = folder_ + "/" + name;
      ::unlink(path.c_str());
      if (name[0] == 'm' || with_optimizer) {
        if (::symlink(target.c_str(), path.c_str()) != 0) return "";
      }
    }
    return folder_;
  }

 private:
  std::string folder_;
};

void read_as_tag(const std::string& input, bool with_optimizer) {
  static OneFileTag tag;
  const std::string folder = tag.link(input, with_optimizer);
  if (folder.empty()) return;
  try {
    const DeepSpeedCheckpoint checkpoint(folder);
    const auto& s = checkpoint.summary();
    if (s.parameter_count() > (1 << 24)) return;  // the buffers would be larger than the input allows anyway
    checkpoint.canonical("fp32");
    for (const auto& name : s.state_names) checkpoint.canonical(name);
    checkpoint.loss_scaler();
    checkpoint.lr_last_batch_iteration();
    checkpoint.client_state();
  } catch (const CheckpointError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MemoryFile input(data, size);
  if (input.ok()) {
    try {
      const TorchFile file(input.path());
      int budget = 4096;
      walk(file, file.root(), 0, budget);
    } catch (const CheckpointError&) {
    }
    read_as_tag(input.path(), size % 2 == 1);
  }
  try {
    read_pickle(reinterpret_cast<const char*>(data), size, "fuzz input");
  } catch (const CheckpointError&) {
  }
  return 0;
}
