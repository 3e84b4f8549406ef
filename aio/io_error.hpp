#pragma once
// The error type of the asynchronous I/O layer. Every failure names who was doing it (the owner,
// e.g. "rank 1"), the file, what was being done, and the cause as the kernel reported it, so a full
// disk reads "rank 1: cannot write '/nvme/zero_stage_3/optimizer/rank1/0_11.tensor.swp' (16.0 MiB
// at offset 0): No space left on device (ENOSPC)".

#include <stdexcept>
#include <string>

namespace shardscope::aio {

class IoError : public std::runtime_error {
 public:
  /// `error` is the errno value (0 when the cause is not an errno, e.g. a short read).
  IoError(const std::string& message, int error) : std::runtime_error(message), error_(error) {}
  /// The errno value of the cause (ENOSPC, EACCES, ...), 0 when there is none.
  int error() const { return error_; }

 private:
  int error_;
};

/// "No space left on device (ENOSPC)": strerror and the symbolic name of `error`.
std::string describe_errno(int error);
/// "rank 1: cannot write 'path' (16.0 MiB at offset 0): No space left on device (ENOSPC)": `detail`
/// (may be empty) follows the quoted path.
IoError make_io_error(const std::string& owner, const std::string& what, const std::string& path, int error,
                      const std::string& detail = "");

/// Bytes as "16.0 MiB", "512 B", "1.50 GiB".
std::string format_bytes(double bytes);

}  // namespace shardscope::aio
