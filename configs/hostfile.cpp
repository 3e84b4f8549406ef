#include "configs/hostfile.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace shardscope::configs {
namespace {

constexpr int kMaxSlots = 1 << 16;
constexpr std::size_t kMaxHostfileBytes = 4u << 20;

std::string strip(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n\f\v");
  return text.substr(first, last - first + 1);
}

std::string where(const std::string& path, int line) { return path + ":" + std::to_string(line) + ": "; }

// Host names are ASCII (an international name is written in punycode); a control character in
// one would reach ssh's command line and every message that names the host.
bool plain_host_name(const std::string& host) {
  return std::all_of(host.begin(), host.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// DeepSpeed's pattern r'^(\S+)\s+slots=(\d+)' (re.search on the stripped line: a prefix match).
bool match_entry(const std::string& line, std::string& host, std::string& digits) {
  std::size_t i = 0;
  while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  if (i == 0 || i == line.size()) return false;
  host = line.substr(0, i);
  while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  if (line.compare(i, 6, "slots=") != 0) return false;
  i += 6;
  const std::size_t start = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  digits = line.substr(start, i - start);
  return !digits.empty();
}

}  // namespace

const HostfileEntry* Hostfile::find(const std::string& host) const {
  for (const auto& entry : hosts)
    if (entry.host == host) return &entry;
  return nullptr;
}

Hostfile parse_hostfile(const std::string& text, const std::string& path) {
  Hostfile hostfile;
  hostfile.path = path;
  std::istringstream in(text);
  std::string raw;
  for (int number = 1; std::getline(in, raw); ++number) {
    const std::string line = strip(raw);
    if (line.empty() || line[0] == '#') continue;
    std::string host, digits;
    if (!match_entry(line, host, digits))
      throw HostfileError(where(path, number) + "Hostfile contains a bad entry: " + line +
                          ", unable to proceed with launching (write one `HOST slots=N` per line, e.g. "
                          "`worker-0 slots=8`)");
    if (!plain_host_name(host))
      throw HostfileError(where(path, number) + "host name " + host +
                          " holds a control character or a byte that is not ASCII; write the host's name or "
                          "address (an international name in its xn-- form)");
    if (const HostfileEntry* first = hostfile.find(host))
      throw HostfileError(where(path, number) + "Hostfile contains multiple entries for " + host +
                          ", unable to proceed with launching (line " + std::to_string(first->line) +
                          " names it already; keep one line per host)");
    if (digits.size() > 6 || std::stoi(digits) > kMaxSlots)
      throw HostfileError(where(path, number) + "slots=" + digits + " for " + host + " is more than " +
                          std::to_string(kMaxSlots) + " slots; give the number of GPUs (or CPU ranks) of the host");
    hostfile.hosts.push_back({host, std::stoi(digits), number});
  }
  if (hostfile.hosts.empty())
    throw HostfileError(path + ": Hostfile is empty or not formatted correctly, unable to proceed with launching. "
                        "Write one `HOST slots=N` line per host, or give no --hostfile for a run on this machine.");
  return hostfile;
}

std::optional<Hostfile> read_hostfile(const std::string& path) {
  struct stat st {};
  // Only a path that is not there at all is "no hostfile" (DeepSpeed's default /job/hostfile); a
  // dangling or looping symlink, or one we may not read, is the user's hostfile gone wrong, and
  // running locally instead would hide it.
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  if (::stat(path.c_str(), &st) != 0)
    throw HostfileError("cannot read hostfile " + path + ": " + std::strerror(errno) +
                        (errno == ELOOP || errno == ENOENT ? " (a symbolic link that loops or points nowhere)" : "") +
                        "; point --hostfile at a file of `HOST slots=N` lines");
  if (!S_ISREG(st.st_mode))  // os.path.isfile: a directory or device is "no hostfile" to DeepSpeed
    throw HostfileError(path + " is not a regular file; give --hostfile a text file of `HOST slots=N` lines");
  if (static_cast<std::size_t>(st.st_size) > kMaxHostfileBytes)
    throw HostfileError(path + " is " + std::to_string(st.st_size) + " bytes, which is no hostfile (at most " +
                        std::to_string(kMaxHostfileBytes >> 20) + " MiB)");
  std::ifstream in(path);
  if (!in) throw HostfileError("cannot read hostfile " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile(text.str(), path);
}

std::string format_hostfile(const Hostfile& hostfile) {
  std::string text;
  for (const auto& entry : hostfile.hosts) text += entry.host + " slots=" + std::to_string(entry.slot_count) + "\n";
  return text;
}

}  // namespace shardscope::configs
