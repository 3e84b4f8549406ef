#pragma once
// DeepSpeed's swap folders, one set per rank under nvme_path:
//   <nvme_path>/zero_stage_3/optimizer/rank<R>/            optimizer state (partitioned_optimizer_swapper)
//   <nvme_path>/zero_stage_3/<dtype>params/rank<R>/        16-bit parameters (partitioned_param_swapper;
//                                                          <dtype> is torch's name: float16, bfloat16, float32)
// A SwapFolder creates its folder (removing what a run that did not exit cleanly left in it, as
// DeepSpeed's parameter swapper does), probes once whether O_DIRECT works there, and at
// destruction removes the folder and every parent up to nvme_path that is left empty: a clean
// exit leaves nothing behind.

#include <string>

namespace shardscope::aio {

/// "<nvme_path>/zero_stage_3/optimizer/rank<R>".
std::string optimizer_swap_folder(const std::string& nvme_path, int rank);
/// "<nvme_path>/zero_stage_3/<dtype>params/rank<R>", dtype "float16", "bfloat16" or "float32".
std::string param_swap_folder(const std::string& nvme_path, const std::string& dtype, int rank);

/// The file system of `path` by name ("ext4", "xfs", "tmpfs", "ramfs", "overlay", ...), or its
/// magic number in hex when unknown.
std::string filesystem_name(const std::string& path);

class SwapFolder {
 public:
  /// Creates `folder` (and its parents) under `root` (the nvme_path), empty. Throws IoError naming
  /// `owner`, the folder and the cause (Permission denied, Read-only file system, Not a directory).
  SwapFolder(std::string root, std::string folder, std::string owner);
  /// Removes the folder's files, the folder, and the parents below root that are empty.
  ~SwapFolder();
  SwapFolder(const SwapFolder&) = delete;
  SwapFolder& operator=(const SwapFolder&) = delete;

  const std::string& path() const { return folder_; }
  /// path() + "/" + name.
  std::string file(const std::string& name) const { return folder_ + "/" + name; }
  /// Whether files here can be opened with O_DIRECT (false on ramfs and the like).
  bool direct_io() const { return direct_io_; }
  /// The file system the folder is on ("ext4", "tmpfs", ...).
  const std::string& filesystem() const { return filesystem_; }
  const std::string& owner() const { return owner_; }

 private:
  std::string root_, folder_, owner_, filesystem_;
  bool direct_io_ = true;
};

}  // namespace shardscope::aio
