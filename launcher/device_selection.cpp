#include "launcher/device_selection.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "configs/node_selection.hpp"
#include "launcher/launch_error.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::launcher {
namespace {

LaunchError environment(const std::string& message) {
  return LaunchError(LaunchError::Kind::kEnvironment, message);
}

// DeepSpeed's NODE_SPEC syntax, with the launcher's error type.
std::vector<configs::NodeSpec> node_specs(const std::string& text, const std::string& flag) {
  try {
    return configs::parse_node_specs(text, flag);
  } catch (const configs::NodeSelectionError& e) {
    throw usage_error(e.what());
  }
}

std::string local_only_message(const std::string& flag, const std::string& host) {
  return flag + ": host '" + host + "' is not this machine, and there is no hostfile to find it in: name this "
         "machine localhost, or list the hosts of a multi-node run in a hostfile (--hostfile FILE, `HOST slots=N` "
         "lines)";
}

// The ids a NODE_SPEC list names on this machine, after checking each against the GPUs present.
std::vector<int> named_slots(const std::vector<configs::NodeSpec>& specs, const DeviceSelectionOptions& o,
                             const std::string& flag, bool* whole_host) {
  std::set<int> ids;
  for (const auto& spec : specs) {
    if (std::find(o.local_names.begin(), o.local_names.end(), spec.host) == o.local_names.end())
      throw usage_error(local_only_message(flag, spec.host));
    if (spec.slots.empty()) *whole_host = true;
    for (int slot : spec.slots) {
      if (slot >= o.gpu_count)
        throw usage_error(flag + ": No slot '" + std::to_string(slot) + "' specified on host '" + spec.host +
                    "': this machine has " + std::to_string(o.gpu_count) + " GPU(s), ids " +
                    configs::format_slot_ids([&] {
                      std::vector<int> all(static_cast<std::size_t>(o.gpu_count));
                      for (int i = 0; i < o.gpu_count; ++i) all[static_cast<std::size_t>(i)] = i;
                      return all;
                    }()));
      ids.insert(slot);
    }
  }
  return {ids.begin(), ids.end()};
}

std::string no_gpu_message(const DeviceSelectionOptions& o, const std::string& why) {
  const std::string n = o.num_gpus > 0 ? std::to_string(o.num_gpus) : "N";
  return std::string(o.num_gpus > 0 ? "--num_gpus " + n + ": " : "") + why +
         "; use --num_procs " + n + " to start " + n + " CPU rank(s) (Gloo) instead";
}

// DeepSpeed turns CUDA_VISIBLE_DEVICES into --include when no filter is given, else ignores it.
std::string include_from_visible_devices(const DeviceSelectionOptions& o, std::vector<std::string>& notes) {
  if (!o.cuda_visible_devices) return o.include;
  const std::string& value = *o.cuda_visible_devices;
  const bool filtered = !o.include.empty() || !o.exclude.empty() || o.num_gpus > 0;
  if (filtered) {
    notes.push_back("Detected CUDA_VISIBLE_DEVICES=" + value +
                    " but ignoring it because one or several of --include/--exclude/--num_gpus were used. If you "
                    "want to use CUDA_VISIBLE_DEVICES don't pass any of these arguments to shardscope launch.");
    return o.include;
  }
  const auto entries = sessions::parse_cuda_visible_devices(value);
  if (entries.empty())
    throw environment(no_gpu_message(o, "CUDA_VISIBLE_DEVICES='" + value + "' hides every GPU (unset it to use them)"));
  std::string ids;
  for (const auto& e : entries) {
    if (e.empty() || !std::all_of(e.begin(), e.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw environment("CUDA_VISIBLE_DEVICES=" + value + " names GPU '" + e + "' by UUID; shardscope launch selects "
                        "GPUs by index as DeepSpeed does: set CUDA_VISIBLE_DEVICES to indices (nvidia-smi -L lists "
                        "them) or unset it and pass --include localhost:0,1");
    ids += (ids.empty() ? "" : ",") + e;
  }
  notes.push_back("Detected CUDA_VISIBLE_DEVICES=" + value + ": setting --include=localhost:" + ids);
  return "localhost:" + ids;
}

}  // namespace

DeviceSelection select_local_devices(const DeviceSelectionOptions& o) {
  if (!o.include.empty() && !o.exclude.empty())
    throw usage_error("--include and --exclude are mutually exclusive (as in DeepSpeed): give one of them");
  if (o.num_gpus == 0 || o.num_gpus < -1) throw usage_error("--num_gpus must be a positive number of GPUs");
  if (o.num_gpus > 0 && (!o.include.empty() || !o.exclude.empty()))
    throw usage_error("--num_gpus cannot be combined with --include/--exclude (DeepSpeed refuses it too): pick the GPUs "
                "with one of them");
  // Syntax and host names first: a wrong flag is worth fixing before the machine's GPUs matter.
  for (const auto& [flag, text] : {std::pair<std::string, std::string>{"--include", o.include}, {"--exclude", o.exclude}})
    if (!text.empty())
      for (const auto& spec : node_specs(text, flag))
        if (std::find(o.local_names.begin(), o.local_names.end(), spec.host) == o.local_names.end())
          throw usage_error(local_only_message(flag, spec.host));
  DeviceSelection selection;
  const std::string include = include_from_visible_devices(o, selection.notes);
  if (o.gpu_count <= 0) throw environment(no_gpu_message(o, "no GPU is visible on this machine (nvidia-smi lists none)"));
  std::vector<int> all(static_cast<std::size_t>(o.gpu_count));
  for (int i = 0; i < o.gpu_count; ++i) all[static_cast<std::size_t>(i)] = i;
  if (o.num_gpus > 0) {
    if (o.num_gpus > o.gpu_count)
      throw environment("--num_gpus " + std::to_string(o.num_gpus) + ": this machine has " + std::to_string(o.gpu_count) +
                        " GPU(s) (ids " + configs::format_slot_ids(all) + "); ask for at most " + std::to_string(o.gpu_count));
    selection.device_ids.assign(all.begin(), all.begin() + o.num_gpus);
    return selection;
  }
  if (!include.empty()) {
    bool whole = false;
    const std::string flag = o.include.empty() ? "--include (from CUDA_VISIBLE_DEVICES)" : "--include";
    selection.device_ids = named_slots(node_specs(include, flag), o, flag, &whole);
    if (whole) selection.device_ids = all;
    return selection;
  }
  selection.device_ids = all;
  if (!o.exclude.empty()) {
    bool whole = false;
    const auto removed = named_slots(node_specs(o.exclude, "--exclude"), o, "--exclude", &whole);
    if (whole) selection.device_ids.clear();
    for (int id : removed) selection.device_ids.erase(std::remove(selection.device_ids.begin(), selection.device_ids.end(), id),
                                                      selection.device_ids.end());
    if (selection.device_ids.empty())
      throw usage_error("--exclude " + o.exclude + " leaves no GPU to run on (this machine has ids " + configs::format_slot_ids(all) + ")");
  }
  return selection;
}

int count_nvidia_smi_gpus(const std::string& output) {
  int count = 0;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("GPU ", 0) == 0 && line.find(':') != std::string::npos) ++count;
  return count;
}

int count_local_gpus() {
  // nvidia-smi sees what the container was given; it never creates a CUDA context.
  if (FILE* pipe = ::popen("nvidia-smi -L 2>/dev/null", "r")) {
    std::string output;
    char buffer[512];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    const int status = ::pclose(pipe);
    if (status == 0) return count_nvidia_smi_gpus(output);
  }
  // Without nvidia-smi: the driver lists one folder per GPU (its PCI address).
  DIR* dir = ::opendir("/proc/driver/nvidia/gpus");
  if (!dir) return 0;
  int count = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  ::closedir(dir);
  return count;
}

}  // namespace shardscope::launcher
