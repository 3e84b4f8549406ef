#pragma once
// The DeepSpeed release whose rules ShardScope applies: one value, passed to the config rules and
// to whatever reads what DeepSpeed writes (DESIGN.md). A front end takes --deepspeed-version; left
// out, the default is the DeepSpeed installed in the user's Python (its dist-info version, read
// without importing torch), else 0.19.7.

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::configs {

enum class DeepSpeedVersion { k0_19_7, k0_19_8 };

/// "0.19.7", "0.19.8".
const char* to_string(DeepSpeedVersion version);

/// The releases ShardScope has rules for, oldest first, as "0.19.7, 0.19.8".
std::string supported_deepspeed_versions_text();

/// "0.19.7" -> k0_19_7; a local suffix ("0.19.8+cu130", "0.19.8.dev0") is not a release of its own
/// and is refused like any other unknown text. nullopt for an unsupported version.
std::optional<DeepSpeedVersion> parse_deepspeed_version(const std::string& text);

/// As parse_deepspeed_version, but throws std::invalid_argument naming the text, the flag and the
/// supported versions.
DeepSpeedVersion deepspeed_version_from_flag(const std::string& text);

/// The DeepSpeed importable in a Python: its version (from the package metadata) and where it is.
struct InstalledDeepSpeed {
  std::string python;    ///< the interpreter asked ("python3", $SHARDSCOPE_PYTHON)
  std::string version;   ///< e.g. "0.19.8"; empty when that Python has no DeepSpeed
  std::string location;  ///< the site-packages folder holding it
};

/// Asks $SHARDSCOPE_PYTHON (else the python3 on PATH, i.e. the active virtual environment) for
/// importlib.metadata's deepspeed distribution; nullopt when there is no such Python.
std::optional<InstalledDeepSpeed> find_installed_deepspeed();

/// The versions of `packages` ("deepspeed", "transformers", "accelerate") installed for the
/// Python `python` (a name on PATH or a path), read from their dist-info like
/// find_installed_deepspeed; a package that is absent is left out.
std::map<std::string, std::string> installed_package_versions(const std::string& python,
                                                              const std::vector<std::string>& packages);

/// The Python that runs `program` (a name on PATH or a path): itself when it is a python
/// interpreter, else its "#!" line's interpreter (deepspeed, torchrun, accelerate are scripts);
/// empty when neither.
std::string python_of_program(const std::string& program);

/// Which rules apply, and why: shown by every command that applies them.
struct DeepSpeedRules {
  DeepSpeedVersion version = DeepSpeedVersion::k0_19_7;
  std::string source;  ///< "--deepspeed-version", "the DeepSpeed installed in ...", "default (...)"
  /// "DeepSpeed 0.19.8 rules (the DeepSpeed 0.19.8 importable in python3, /x/site-packages)".
  std::string describe() const;
};

/// The flag's value when given (throws std::invalid_argument when unsupported), else the installed
/// DeepSpeed's version when supported, else 0.19.7 with a source that says why.
DeepSpeedRules choose_deepspeed_rules(const std::optional<std::string>& flag);

}  // namespace shardscope::configs
