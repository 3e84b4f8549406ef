#pragma once
// MPI-style hostfiles as DeepSpeed's runner reads them (deepspeed/launcher/runner.py,
// fetch_hostfile and _parse_hostfile): one `HOST slots=N` per line, `#` comments and blank lines
// ignored, DeepSpeed's errors for a bad line, a repeated host or an empty file, each prefixed with
// the file and line. Qt-free and LibTorch-free: the launcher, the preflight and the GUI's hostfile
// editor share it.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::configs {

/// DeepSpeed's default --hostfile (DLTS_HOSTFILE).
inline constexpr const char* kDefaultHostfile = "/job/hostfile";
/// DeepSpeed's warning when the hostfile does not exist: the run then uses this machine only.
inline constexpr const char* kNoHostfileWarning =
    "Unable to find hostfile, will proceed with training with local resources only.";

/// A hostfile that cannot be used: the message names the file, the line and the remedy.
class HostfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HostfileEntry {
  std::string host;
  int slot_count = 0;  ///< `slots=N`: the host's GPUs (or CPU ranks), slot ids 0..N-1
  int line = 0;   ///< 1-based line in the file
};

/// The resource pool, in file order (DeepSpeed's OrderedDict: ranks follow this order).
struct Hostfile {
  std::string path;
  std::vector<HostfileEntry> hosts;

  /// The entry of `host`, or nullptr.
  const HostfileEntry* find(const std::string& host) const;
};

/// Parses hostfile text; `path` names it in errors. Throws HostfileError with DeepSpeed's text
/// ("Hostfile contains a bad entry: LINE, unable to proceed with launching", "Hostfile contains
/// multiple entries for HOST, ...", "Hostfile is empty or not formatted correctly, ...").
Hostfile parse_hostfile(const std::string& text, const std::string& path);

/// Reads `path`. nullopt when it is not a file (DeepSpeed then warns kNoHostfileWarning and runs
/// locally); HostfileError when it cannot be read or parsed.
std::optional<Hostfile> read_hostfile(const std::string& path);

/// The text of a hostfile: one `HOST slots=N` line per entry (what a GUI saves).
std::string format_hostfile(const Hostfile& hostfile);

}  // namespace shardscope::configs
