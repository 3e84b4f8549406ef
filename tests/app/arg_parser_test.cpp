#include "app/cli/arg_parser.hpp"

#include <gtest/gtest.h>

namespace shardscope::app {
namespace {

ArgParser sample_parser() {
  ArgParser parser("validate", "checks configs");
  parser.flag("json", "machine output")
      .flag("strict", "policy lints")
      .option("world-size", "N", "data-parallel size")
      .option("set", "K=V", "fill a value", /*repeatable=*/true)
      .positional("FILE", "config files", 1, -1);
  return parser;
}

TEST(ArgParser, ParsesFlagsOptionsAndPositionals) {
  const auto args = sample_parser().parse(
      {"a.json", "--json", "--world-size", "8", "--set", "x=1", "--set=y=2", "b.json"});
  EXPECT_TRUE(args.has("json"));
  EXPECT_FALSE(args.has("strict"));
  EXPECT_EQ(args.integer("world-size"), 8);
  EXPECT_EQ(args.values("set"), (std::vector<std::string>{"x=1", "y=2"}));
  EXPECT_EQ(args.positionals, (std::vector<std::string>{"a.json", "b.json"}));
}

TEST(ArgParser, UnknownFlagSuggestsTheClosestOne) {
  try {
    sample_parser().parse({"a.json", "--wrold-size", "8"});
    FAIL();
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'--wrold-size'"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean '--world-size'"), std::string::npos) << message;
  }
}

TEST(ArgParser, RejectsMissingValuesRepeatsAndBadIntegers) {
  EXPECT_THROW(sample_parser().parse({"a.json", "--world-size"}), UsageError);
  EXPECT_THROW(sample_parser().parse({"a.json", "--world-size", "2", "--world-size", "3"}), UsageError);
  EXPECT_THROW(sample_parser().parse({"a.json", "--json=yes"}), UsageError);
  const auto args = sample_parser().parse({"a.json", "--world-size", "8x"});
  EXPECT_THROW(args.integer("world-size"), UsageError);
}

TEST(ArgParser, PositionalCountsAreEnforced) {
  EXPECT_THROW(sample_parser().parse({"--json"}), UsageError);
  ArgParser one("ckpt", "x");
  one.positional("DIR", "dir");
  EXPECT_THROW(one.parse({"a", "b"}), UsageError);
  EXPECT_NO_THROW(one.parse({"a"}));
}

TEST(ArgParser, HelpSkipsValidationAndListsOptions) {
  const auto args = sample_parser().parse({"--help"});
  EXPECT_TRUE(args.help);
  const std::string help = sample_parser().help_text();
  EXPECT_NE(help.find("--world-size N"), std::string::npos);
  EXPECT_NE(help.find("(repeatable)"), std::string::npos);
}

TEST(ArgParser, PassthroughOnlyWhereAllowed) {
  ArgParser launch("launch", "x");
  launch.option("num_procs", "N", "ranks").allow_passthrough("train arguments");
  const auto args = launch.parse({"--num_procs", "2", "--", "train", "--steps", "5"});
  EXPECT_EQ(args.passthrough, (std::vector<std::string>{"train", "--steps", "5"}));
  EXPECT_THROW(sample_parser().parse({"a.json", "--", "x"}), UsageError);
}

TEST(ArgParser, NegativeNumbersArePositionalsNotFlags) {
  ArgParser p("x", "x");
  p.positional("N", "number");
  EXPECT_EQ(p.parse({"-5"}).positionals.at(0), "-5");
}

}  // namespace
}  // namespace shardscope::app
