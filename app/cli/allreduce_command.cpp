// shardscope allreduce: one rank of a timed all-reduce (see engine/allreduce_check.hpp); the
// preflight launches it on every slot of every host. Rank 0 prints the result as one JSON line.
#include <iostream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "engine/allreduce_check.hpp"

namespace shardscope::app {
namespace {

ArgParser allreduce_parser() {
  ArgParser parser("allreduce",
                   "One rank of a timed all-reduce across the ranks of a launch (RANK, WORLD_SIZE, MASTER_ADDR,\n"
                   "MASTER_PORT as for train): the check `shardscope launch --preflight` runs on every host. Rank 0\n"
                   "prints `shardscope allreduce: {json}` with the mean time, algbw and busbw (nccl-tests' definitions)\n"
                   "and whether every rank saw the exact sum. Exit code 1 for a wrong sum.");
  parser.option("bytes", "N", "bytes of the float buffer (default 16777216)")
      .option("iters", "N", "timed all-reduces (default 5)")
      .option("device", "auto|cpu|cuda", "where the buffer lives (default auto)");
  return parser;
}

}  // namespace

int run_allreduce_command(const CommandArgs& args) {
  const ArgParser parser = allreduce_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  engine::AllReduceCheckOptions o;
  o.bytes = p.integer("bytes").value_or(o.bytes);
  o.iterations = static_cast<int>(p.integer("iters").value_or(o.iterations));
  o.device = p.value("device").value_or("auto");
  try {
    return engine::run_allreduce_check(o, std::cout).correct ? kExitOk : kExitFindings;
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace shardscope::app
