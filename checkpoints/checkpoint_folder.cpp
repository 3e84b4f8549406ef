#include "checkpoints/checkpoint_folder.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/deepspeed_partitioning.hpp"
#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kMaxTagBytes = 255;  // one path component
constexpr std::uint64_t kMaxLatestBytes = 4096;

}  // namespace

bool is_valid_tag(const std::string& tag, std::string* why) {
  const auto reason = [&](const std::string& text) {
    if (why) *why = text;
    return false;
  };
  if (tag.empty()) return reason("it is empty");
  if (tag.size() > kMaxTagBytes) return reason("it is " + std::to_string(tag.size()) + " bytes long, more than a folder name can be");
  if (tag == "." || tag == "..") return reason("it names the directory itself or its parent, not a tag inside it");
  if (tag.find('/') != std::string::npos) return reason("it holds '/', so it leaves the checkpoint directory or names a nested path");
  for (unsigned char c : tag)
    if (c < 0x20 || c == 0x7F) return reason("it holds control characters");
  return true;
}

std::optional<std::string> read_latest_tag(const std::string& dir) {
  const std::string path = (fs::path(dir) / "latest").string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return std::nullopt;
  const RegularFile file(path);  // refuses a FIFO or a device by its type, before reading
  if (file.size() > kMaxLatestBytes)
    throw unreadable(path, "holds " + std::to_string(file.size()) + " bytes; DeepSpeed's latest file holds one tag name "
                           "(at most " + std::to_string(kMaxTagBytes) + " bytes): it is not a latest file");
  const auto bytes = file.read_all(kMaxLatestBytes);
  std::string tag(bytes.begin(), bytes.end());
  const auto begin = tag.find_first_not_of(" \t\r\n"), end = tag.find_last_not_of(" \t\r\n");
  tag = begin == std::string::npos ? "" : tag.substr(begin, end - begin + 1);
  std::string why;
  if (!is_valid_tag(tag, &why))
    throw unreadable(path, "names '" + printable(tag) + "', which is not a tag of this directory: " + why +
                           "; pass the tag you mean explicitly");
  return tag;
}

namespace {

// A save interrupted before rank 0's model states were renamed into place leaves only temporaries
// ("zero_pp_rank_1_mp_rank_00_optim_states.pt.tmp.4242"): still a tag, an incomplete one, so that
// `ckpt info` shows it and the next save removes what it left.
bool holds_save_temporaries(const fs::path& folder) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    std::string final_name;
    if (is_temporary_name(e.path().filename().string(), &final_name) &&
        (parse_checkpoint_file_name(final_name) || final_name == kManifestFileName))
      return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> checkpoint_tags(const std::string& dir) {
  std::vector<std::string> tags;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code type_error;
    if (!fs::is_directory(e.symlink_status(type_error))) continue;
    if (fs::exists(e.path() / model_states_file_name(0, 0), type_error) ||
        fs::exists(e.path() / model_states_file_name(3, 0), type_error) || holds_save_temporaries(e.path()))
      tags.push_back(e.path().filename().string());
  }
  if (ec) throw unreadable(dir, "cannot be listed (" + ec.message() + ")");
  std::sort(tags.begin(), tags.end());
  return tags;
}

std::vector<std::pair<std::string, std::uint64_t>> leftover_temporaries(const std::string& folder) {
  std::vector<std::pair<std::string, std::uint64_t>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code type_error;
    if (!fs::is_regular_file(e.symlink_status(type_error)) || !is_temporary_name(name)) continue;
    found.emplace_back(name, static_cast<std::uint64_t>(fs::file_size(e.path(), type_error)));
  }
  std::sort(found.begin(), found.end());
  return found;
}

void remove_file_quietly(const std::string& path) { ::unlink(path.c_str()); }

}  // namespace shardscope::checkpoints
