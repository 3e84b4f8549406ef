#include "sessions/import/file_bytes.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "configs/config_document.hpp"
#include "configs/input_file.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {
namespace {

constexpr const char* kWhat = "file to import";

// configs::InputFile refuses folders, FIFOs, devices and sockets by type (a FIFO named as a
// DeepSpeed log would otherwise block the import forever); its errors become the importers' own.
template <typename Read>
std::string with_input_file(const std::string& path, Read read) {
  try {
    const configs::InputFile file(path, kWhat);
    return read(file);
  } catch (const configs::InputFileError& error) {
    throw ImportError(error.what());
  }
}

// Up to `size` bytes at `offset` of a file that may still be growing; fewer only at its end.
std::string read_growing(const configs::InputFile& file, const std::string& path, std::uint64_t offset,
                         std::size_t size) {
  std::string out(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(file.fd(), out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ImportError(path + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

}  // namespace

std::string read_config_file_bytes(const std::string& path) {
  try {
    return configs::read_config_file_text(path);
  } catch (const configs::ConfigFileError& error) {
    throw ImportError(error.what());
  }
}

std::string read_file_bytes(const std::string& path, std::size_t max_bytes) {
  return with_input_file(path, [&](const configs::InputFile& file) {
    if (file.size() > max_bytes)
      throw ImportError(path + ": " + std::to_string(file.size()) + " bytes, more than the " +
                        std::to_string(max_bytes) + " this importer reads; split or trim the file");
    return read_growing(file, path, 0, static_cast<std::size_t>(file.size()));
  });
}

std::string read_file_from(const std::string& path, std::uint64_t offset, std::size_t max_bytes) {
  return with_input_file(path, [&](const configs::InputFile& file) {
    return read_growing(file, path, offset, max_bytes);
  });
}

}  // namespace shardscope::sessions
