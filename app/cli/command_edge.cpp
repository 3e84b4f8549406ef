#include <exception>
#include <iostream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/session_error_exit.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "configs/display_text.hpp"
#include "configs/input_file.hpp"

namespace shardscope::app {

int run_at_edge(CommandRun run, const CommandArgs& args) {
  try {
    return run(args);
  } catch (const UsageError& error) {
    std::cerr << "shardscope: " << configs::shown_text(error.what()) << "\n";
    return kExitUsage;
  } catch (const configs::InputFileError& error) {  // README: 2 for unreadable inputs
    std::cerr << "shardscope: error: " << configs::shown_text(error.what()) << "\n";
    return kExitUsage;
  } catch (const checkpoints::CheckpointError& error) {  // train --load NOTADIR: unreadable is a bad input
    std::cerr << "shardscope: error: " << configs::shown_text(error.what()) << "\n";
    return error.kind() == checkpoints::CheckpointErrorKind::kUnreadable ? kExitUsage : kExitFindings;
  } catch (const sessions::SessionsError& error) {
    // A session file that is missing, foreign, damaged or a link (--db, --session) is a bad input,
    // as in `shardscope sessions`; a write that fails or a collector out of reach is the run's own.
    std::cerr << "shardscope: error: " << configs::shown_text(error.what()) << "\n";
    return session_error_exit_code(error);
  } catch (const std::exception& error) {
    std::cerr << "shardscope: error: " << configs::shown_text(error.what()) << "\n";
    return kExitFindings;
  }
}

}  // namespace shardscope::app
