#pragma once
// Version and provenance of this build, shared by every front end and recorded in each session.

#include <string>

namespace shardscope::sessions {

struct BuildInfo {
  std::string version;     ///< ShardScope's semantic version, from CMake's project().
  std::string git_hash;    ///< short hash of the built commit, "-dirty" when the tree had edits
  std::string compiler;    ///< e.g. "GNU 12.2.0"
  std::string build_type;  ///< CMAKE_BUILD_TYPE
};

/// The build this binary was made from (generated at build time by WriteBuildInfo.cmake).
const BuildInfo& build_info();

}  // namespace shardscope::sessions
