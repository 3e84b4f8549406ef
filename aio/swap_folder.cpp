#include "aio/swap_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "aio/io_error.hpp"

namespace shardscope::aio {
namespace {

// "/a//b/" -> "/a/b": the folder walk up to root compares paths as strings.
std::string without_trailing_slashes(const std::string& path) {
  std::string out;
  for (char c : path)
    if (c != '/' || out.empty() || out.back() != '/') out += c;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// mkdir -p, naming the first component that cannot be made.
void make_folders(const std::string& path, const std::string& owner) {
  for (std::size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) == 0 || errno == EEXIST) {
      struct stat st {};
      if (::stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        throw make_io_error(owner, "cannot create swap folder", path, ENOTDIR, "('" + prefix + "' is a file)");
      continue;
    }
    throw make_io_error(owner, "cannot create swap folder", path, errno);
  }
}

// Removes the regular files directly inside `folder` (swap files only ever live there).
void remove_files_in(const std::string& folder) {
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return;
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  for (const auto& name : names) ::unlink((folder + "/" + name).c_str());
}

// Whether O_DIRECT opens work in `folder`: ramfs and some FUSE or network file systems say EINVAL.
bool probe_direct_io(const std::string& folder, const std::string& owner) {
  const std::string probe = folder + "/.o_direct_probe";
  const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0600);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    return true;
  }
  if (errno == EINVAL) {
    ::unlink(probe.c_str());
    return false;
  }
  throw make_io_error(owner, "cannot create a file in swap folder", folder, errno);
}

}  // namespace

std::string optimizer_swap_folder(const std::string& nvme_path, int rank) {
  return without_trailing_slashes(nvme_path) + "/zero_stage_3/optimizer/rank" + std::to_string(rank);
}

std::string param_swap_folder(const std::string& nvme_path, const std::string& dtype, int rank) {
  return without_trailing_slashes(nvme_path) + "/zero_stage_3/" + dtype + "params/rank" + std::to_string(rank);
}

std::string filesystem_name(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x858458F6: return "ramfs";
    case 0x794C7630: return "overlay";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    case 0x2FC12FC1: return "zfs";
    case 0xF2F52010: return "f2fs";
    default: break;
  }
  char text[32];
  std::snprintf(text, sizeof text, "0x%lx", static_cast<unsigned long>(fs.f_type));
  return text;
}

SwapFolder::SwapFolder(std::string root, std::string folder, std::string owner)
    : root_(without_trailing_slashes(std::move(root))), folder_(without_trailing_slashes(std::move(folder))),
      owner_(std::move(owner)) {
  make_folders(folder_, owner_);
  remove_files_in(folder_);
  direct_io_ = probe_direct_io(folder_, owner_);
  filesystem_ = filesystem_name(folder_);
}

SwapFolder::~SwapFolder() {
  remove_files_in(folder_);
  // The folder, then each parent below root that no other rank still uses (rmdir fails on those).
  for (std::string at = folder_;
       at.size() > root_.size() && at.compare(0, root_.size(), root_) == 0 && at[root_.size()] == '/';) {
    if (::rmdir(at.c_str()) != 0) break;
    at = at.substr(0, at.rfind('/'));
  }
}

}  // namespace shardscope::aio
