#include <exception>
#include <iostream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "configs/input_file.hpp"

namespace shardscope::app {

int run_at_edge(CommandRun run, const CommandArgs& args) {
  try {
    return run(args);
  } catch (const UsageError& error) {
    std::cerr << "shardscope: " << error.what() << "\n";
    return kExitUsage;
  } catch (const configs::InputFileError& error) {  // README: 2 for unreadable inputs
    std::cerr << "shardscope: error: " << error.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& error) {
    std::cerr << "shardscope: error: " << error.what() << "\n";
    return kExitFindings;
  }
}

}  // namespace shardscope::app
