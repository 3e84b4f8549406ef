#include "sessions/credentials.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace shardscope::sessions {
namespace {

std::string upper_case(std::string_view text) {
  std::string upper(text);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  return upper;
}

// The parts of a name between underscores and other punctuation ("DB_PASS" -> DB, PASS).
std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words(1);
  for (char c : upper_case(name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) words.back().push_back(c);
    else if (!words.back().empty()) words.emplace_back();
  }
  return words;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

// The variables that explain a run: the communication libraries, CUDA and its libraries, the
// threading runtimes, PyTorch, DeepSpeed and its launcher's exports (runner.py's EXPORT_ENVS: NCCL,
// PYTHON, MV2, UCX; MLFLOW is left out: its variables carry tracking URIs and passwords), the
// Hugging Face libraries' switches and ShardScope's own.
const std::vector<std::string>& recorded_prefixes() {
  static const std::vector<std::string> kPrefixes = {
      "NCCL_",    "CUDA_",     "CUDNN_",   "CUBLAS_", "CUBLASLT_", "CUPTI_",  "NVIDIA_",        "NV_",
      "TORCH_",   "PYTORCH_",  "TORCHINDUCTOR_",      "OMP_",      "MKL_",    "KMP_",           "GOMP_",
      "GLOO_",    "UCX_",      "MV2_",     "FI_",     "NVSHMEM_",  "PYTHON",  "DEEPSPEED_",     "DS_",
      "HF_",      "TRANSFORMERS_",         "TOKENIZERS_",          "ACCELERATE_", "SHARDSCOPE_", "SLURM_",
      "OMPI_COMM_WORLD_",    "PMI_"};
  return kPrefixes;
}

const std::vector<std::string>& recorded_names() {
  static const std::vector<std::string> kNames = {
      "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",  "LOCAL_RANK", "LOCAL_SIZE", "LOCAL_WORLD_SIZE",
      "NODE_RANK",   "CROSS_RANK",  "CROSS_SIZE", "GROUP_RANK",          "LD_LIBRARY_PATH", "LD_PRELOAD",
      "PATH",        "HOSTNAME",    "TMPDIR",     "LANG",  "LC_ALL",     "TZ"};
  return kNames;
}

EnvironmentAllowList EnvironmentAllowList::with_user_patterns(std::string_view user_patterns) {
  EnvironmentAllowList list{recorded_prefixes(), recorded_names()};
  std::string entry;
  auto take = [&] {
    if (entry.empty()) return;
    if (entry.back() == '*') list.prefixes.push_back(entry.substr(0, entry.size() - 1));
    else list.names.push_back(entry);
    entry.clear();
  };
  for (char c : user_patterns) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) take();
    else entry.push_back(c);
  }
  take();
  return list;
}

EnvironmentAllowList EnvironmentAllowList::from_environment() {
  const char* user = std::getenv(kRecordEnvVariable);
  return with_user_patterns(user ? user : "");
}

bool EnvironmentAllowList::allows(std::string_view name) const {
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  // A user's "*" (an empty prefix) would record everything; that is theirs to ask for.
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& prefix) { return starts_with(name, prefix); });
}

bool looks_like_credential(std::string_view name) {
  static const char* const kParts[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH",
                                       "COOKIE", "PRIVATE"};
  static const char* const kWords[] = {"PASS", "PAT", "PWD", "PW", "CRED", "CREDS", "JWT"};
  for (const std::string& word : name_words(name)) {
    if (std::any_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return word == w; })) return true;
    if (std::any_of(std::begin(kParts), std::end(kParts),
                    [&](const char* part) { return word.find(part) != std::string::npos; }))
      return true;
  }
  return false;
}

bool holds_url_password(std::string_view value) {
  // scheme://user:password@host: a ':' and then an '@' in the authority, before any '/'.
  for (std::size_t at = value.find("://"); at != std::string_view::npos; at = value.find("://", at + 3)) {
    const std::string_view rest = value.substr(at + 3);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    const std::size_t userinfo_end = authority.rfind('@');
    if (userinfo_end != std::string_view::npos && authority.substr(0, userinfo_end).find(':') != std::string_view::npos)
      return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> recorded_environment(
    std::vector<std::pair<std::string, std::string>> variables, const EnvironmentAllowList& allow) {
  for (auto& [name, value] : variables)
    if (!allow.allows(name) || looks_like_credential(name) || holds_url_password(value)) value = kRedactedValue;
  return variables;
}

}  // namespace shardscope::sessions
