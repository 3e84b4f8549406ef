// What `shardscope launch` and `shardscope watch` print on stdout once their run is over: a line
// of their own, then the session as `shardscope sessions show` prints it. That line marks where
// the run's output ends: the summary's lines carry no prefix, and a one-rank run's lines have none
// either, so a reader of the output (the GUI's console) could not tell them apart without it.
#include <iostream>

#include "app/cli/commands.hpp"

namespace shardscope::app {

int print_closing_summary(const std::string& who, const std::string& what, int exit_code, const std::string& uid,
                          const std::string& db) {
  std::cout << who << ": " << what << " ended with exit code " << exit_code << "; the session it recorded:\n";
  std::cout.flush();
  return run_sessions_command({"show", uid, "--db", db});
}

}  // namespace shardscope::app
