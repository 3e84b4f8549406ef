#pragma once
// A small argument parser shared by every subcommand: `--flag`, `--opt value`, `--opt=value`,
// repeatable options, positionals, and `--` to pass the rest through untouched (launch uses it).
// Errors are UsageError with the flag named and a suggestion; the caller exits with code 2.

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::app {

/// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  ///< the command ran and found errors (or a run failed)
inline constexpr int kExitUsage = 2;     ///< bad flags, unreadable inputs

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> options;  ///< option name -> values in order
  std::vector<std::string> flags;                           ///< boolean flags that were given
  std::vector<std::string> positionals;
  std::vector<std::string> passthrough;                     ///< everything after `--`
  bool help = false;

  bool has(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  /// The option's value parsed as an integer; UsageError naming the flag if it is not one.
  std::optional<long long> integer(const std::string& name) const;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  ArgParser& flag(const std::string& name, const std::string& help);
  ArgParser& option(const std::string& name, const std::string& value_name, const std::string& help,
                    bool repeatable = false);
  ArgParser& positional(const std::string& name, const std::string& help, int min_count = 1,
                        int max_count = 1);
  ArgParser& allow_passthrough(const std::string& help);
  /// Another spelling of option `name`: "H" for -H, "num_accelerators" for --num_accelerators.
  ArgParser& alias(const std::string& other, const std::string& name);

  /// Parses `args` (without the program and subcommand names); throws UsageError.
  ParsedArgs parse(const std::vector<std::string>& args) const;
  std::string help_text() const;

 private:
  struct Spec {
    std::string name;
    std::string value_name;  ///< empty for a boolean flag
    std::string help;
    bool repeatable = false;
  };
  struct PositionalSpec {
    std::string name;
    std::string help;
    int min_count = 1;
    int max_count = 1;  ///< -1 = unbounded
  };
  const Spec* find(const std::string& name) const;
  std::string unknown_flag_message(const std::string& name) const;

  std::string command_;
  std::string summary_;
  std::vector<Spec> specs_;
  std::vector<PositionalSpec> positionals_;
  std::string passthrough_help_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace shardscope::app
