#pragma once
// Reading outside files with a bound: opened through configs::InputFile, so anything but a regular
// file (a folder, a FIFO, a device) is refused by its type; the size comes from the file itself
// (fstat), and a file larger than the caller's limit is refused with its size named instead of
// read into memory.

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardscope::sessions {

/// Log, CSV and config files: 1 GiB.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{1} << 30;
/// Chrome traces and TensorBoard event files: 4 GiB (read in one piece, parsed in one pass).
inline constexpr std::size_t kMaxTraceFileBytes = std::size_t{4} << 30;

/// The whole file; throws ImportError naming the file when it cannot be read or exceeds `max_bytes`.
std::string read_file_bytes(const std::string& path, std::size_t max_bytes);
/// A DeepSpeed config given to an import or a watch, read as configs/ reads every config
/// (configs::read_config_file_text: at most kMaxConfigFileBytes); throws ImportError naming the file.
std::string read_config_file_bytes(const std::string& path);
/// Bytes [offset, offset + max_bytes) of a file that may be growing (a live run's CSV or log);
/// "" at the end. Throws ImportError when it cannot be opened.
std::string read_file_from(const std::string& path, std::uint64_t offset, std::size_t max_bytes);

}  // namespace shardscope::sessions
