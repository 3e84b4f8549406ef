#include "app/cli/arg_parser.hpp"

#include <sstream>

#include "configs/did_you_mean.hpp"

namespace shardscope::app {

bool ParsedArgs::has(const std::string& name) const {
  for (const auto& f : flags)
    if (f == name) return true;
  return options.count(name) > 0;
}

std::optional<std::string> ParsedArgs::value(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::values(const std::string& name) const {
  auto it = options.find(name);
  return it == options.end() ? std::vector<std::string>{} : it->second;
}

std::optional<long long> ParsedArgs::integer(const std::string& name) const {
  const auto text = value(name);
  if (!text) return std::nullopt;
  std::size_t used = 0;
  long long result = 0;
  try {
    result = std::stoll(*text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text->size())
    throw UsageError("--" + name + " expects an integer, got '" + *text + "'");
  return result;
}

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, false});
  return *this;
}

ArgParser& ArgParser::option(const std::string& name, const std::string& value_name,
                             const std::string& help, bool repeatable) {
  specs_.push_back({name, value_name, help, repeatable});
  return *this;
}

ArgParser& ArgParser::positional(const std::string& name, const std::string& help, int min_count,
                                 int max_count) {
  positionals_.push_back({name, help, min_count, max_count});
  return *this;
}

ArgParser& ArgParser::allow_passthrough(const std::string& help) {
  passthrough_help_ = help;
  return *this;
}

ArgParser& ArgParser::alias(const std::string& other, const std::string& name) {
  aliases_[other] = name;
  return *this;
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const {
  const auto alias = aliases_.find(name);
  const std::string& canonical = alias == aliases_.end() ? name : alias->second;
  for (const auto& s : specs_)
    if (s.name == canonical) return &s;
  return nullptr;
}

std::string ArgParser::unknown_flag_message(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& s : specs_) names.push_back(s.name);
  names.push_back("help");
  std::string message = "unknown flag '--" + name + "' for '" + command_ + "'";
  if (auto guess = configs::closest_match(name, names)) message += "; did you mean '--" + *guess + "'?";
  return message + " (see 'shardscope " + command_ + " --help')";
}

ParsedArgs ArgParser::parse(const std::vector<std::string>& args) const {
  ParsedArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (passthrough_help_.empty())
        throw UsageError("'" + command_ + "' takes no arguments after '--'");
      parsed.passthrough.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    const bool short_alias = arg.size() == 2 && arg[0] == '-' && aliases_.count(arg.substr(1));
    if (short_alias || (arg.size() > 2 && arg.compare(0, 2, "--") == 0)) {
      std::string name = arg.substr(short_alias ? 1 : 2);
      std::optional<std::string> inline_value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const Spec* spec = find(name);
      if (!spec) throw UsageError(unknown_flag_message(name));
      name = spec->name;
      if (spec->value_name.empty()) {
        if (inline_value) throw UsageError("--" + name + " takes no value");
        parsed.flags.push_back(name);
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= args.size())
          throw UsageError("--" + name + " needs a value (" + spec->value_name + ")");
        inline_value = args[++i];
      }
      auto& slot = parsed.options[name];
      if (!slot.empty() && !spec->repeatable)
        throw UsageError("--" + name + " given more than once");
      slot.push_back(*inline_value);
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9'))
      throw UsageError(unknown_flag_message(arg.substr(1)));
    parsed.positionals.push_back(arg);
  }
  if (parsed.help) return parsed;
  int min_total = 0, max_total = 0;
  bool unbounded = false;
  for (const auto& p : positionals_) {
    min_total += p.min_count;
    if (p.max_count < 0) unbounded = true;
    else max_total += p.max_count;
  }
  const int given = static_cast<int>(parsed.positionals.size());
  if (given < min_total)
    throw UsageError("'" + command_ + "' needs " + positionals_.front().name +
                     " (see 'shardscope " + command_ + " --help')");
  if (!unbounded && given > max_total)
    throw UsageError("unexpected argument '" + parsed.positionals[static_cast<std::size_t>(max_total)] +
                     "' for '" + command_ + "'");
  return parsed;
}

std::string ArgParser::help_text() const {
  std::ostringstream out;
  out << "usage: shardscope " << command_ << " [options]";
  for (const auto& p : positionals_) out << (p.min_count == 0 ? " [" : " ") << p.name
                                         << (p.max_count != 1 ? "..." : "") << (p.min_count == 0 ? "]" : "");
  if (!passthrough_help_.empty()) out << " -- ...";
  out << "\n\n" << summary_ << "\n\noptions:\n";
  for (const auto& s : specs_) {
    std::string left = "--" + s.name + (s.value_name.empty() ? "" : " " + s.value_name);
    for (const auto& [other, name] : aliases_)
      if (name == s.name) left = (other.size() == 1 ? "-" : "--") + other + ", " + left;
    out << "  " << left;
    out << std::string(left.size() < 28 ? 28 - left.size() : 1, ' ') << s.help
        << (s.repeatable ? " (repeatable)" : "") << "\n";
  }
  out << "  -h, --help                  show this help\n";
  if (!passthrough_help_.empty()) out << "  -- ...                      " << passthrough_help_ << "\n";
  return out.str();
}

}  // namespace shardscope::app
