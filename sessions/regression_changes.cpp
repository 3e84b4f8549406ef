// What changed beside what moved: versions, hardware, config values, flipped DeepSpeed defaults,
// run flags; and the refusal to compare sessions of different models.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "sessions/errors.hpp"
#include "sessions/regression_internal.hpp"

namespace shardscope::sessions::detail {
namespace {

using Leaves = std::vector<std::pair<std::string, std::string>>;
using Version = std::array<int, 3>;

// The environment leaves a regression can come from, by kind; the rest (checks, limits) are noise here.
const char* environment_kind(const std::string& path) {
  if (path.rfind("versions.qt", 0) == 0) return nullptr;  // only the GUI fills it in
  if (path.rfind("versions.", 0) == 0) return "version";
  if (path.rfind("accelerator.gpus", 0) == 0 || path.rfind("accelerator.backend", 0) == 0) return "gpu";
  if (path.rfind("kernels", 0) == 0) return "kernel_build";
  if (path == "host.hostname" || path == "host.cpu_model" || path == "host.logical_cores" || path == "host.os" ||
      path.rfind("run.ranks", 0) == 0 || path.rfind("run.hosts", 0) == 0)
    return "host";
  return nullptr;
}

void add_rows(const std::vector<Leaves>& docs, const char* kind, std::vector<ChangedValue>& out) {
  for (auto& row : diff_documents(docs, true)) out.push_back({kind, row.path, std::move(row.values), ""});
}

std::optional<Version> parse_version(const std::string& text) {
  Version v{0, 0, 0};
  if (std::sscanf(text.c_str(), "%d.%d.%d", &v[0], &v[1], &v[2]) < 2) return std::nullopt;
  return v;
}

// The DeepSpeed release whose defaults a session ran under: the recorded one for runs of DeepSpeed
// itself; ShardScope's engine follows 0.19.7 (docs/configs.md).
std::string deepspeed_of(const SessionDetail& d) {
  if (d.environment && !d.environment->versions.deepspeed.empty()) return d.environment->versions.deepspeed;
  return d.info.origin.empty() ? "0.19.7" : "";
}

constexpr const char* kNoSuchKey = "(no such key)";

struct DefaultFlip {
  const char* path;         // config path; "" when no config key sets it
  const char* block;        // the block that must be present for the value to matter ("" = always)
  Version since;
  const char* before;
  const char* after;
};

// /work/shared/reference: the 0.19.x flips the DeepSpeed guide lists.
constexpr DefaultFlip kFlips[] = {
    {"gradient_clipping", "", {0, 19, 3}, "0.0", "1.0"},
    {"bf16.check_grad_overflow", "bf16", {0, 19, 3}, "false", "true"},
    {"zero_optimization.offload_optimizer.pin_memory", "zero_optimization.offload_optimizer", {0, 19, 5}, "false", "true"},
    {"zero_optimization.offload_param.pin_memory", "zero_optimization.offload_param", {0, 19, 5}, "false", "true"},
    {"", "", {0, 19, 6}, "30 min", "10 min"},  // process-group timeout (DEEPSPEED_TIMEOUT)
    // Keys 0.19.8 added (docs/configs.md, "DeepSpeed versions"): absent from 0.19.7's config.
    {"disable_python_gc", "", {0, 19, 8}, kNoSuchKey, "false"},
    {"data_types.keep_in_fp32_modules", "", {0, 19, 8}, kNoSuchKey, "auto"},
};

std::optional<std::string> leaf(const Leaves& leaves, const std::string& path) {
  for (const auto& [p, v] : leaves)
    if (p == path) return v;
  return std::nullopt;
}

bool has_block(const Leaves& leaves, const std::string& block) {
  if (block.empty()) return true;
  for (const auto& [p, v] : leaves)
    if (p.rfind(block + ".", 0) == 0) return true;
  return false;
}

std::optional<ChangedValue> flip_row(const DefaultFlip& flip, const std::vector<SessionDetail>& sessions,
                                     const std::vector<Leaves>& configs) {
  ChangedValue row{"default_flip", *flip.path ? flip.path : "process_group_timeout", {}, ""};
  bool straddles_before = false, straddles_after = false, relevant = false;
  std::string releases;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    const std::string ds = deepspeed_of(sessions[i]);
    const auto v = parse_version(ds);
    const bool after = v && *v >= flip.since;
    if (v) (after ? straddles_after : straddles_before) = true;
    const auto set = *flip.path ? leaf(configs[i], flip.path) : std::nullopt;
    relevant = relevant || has_block(configs[i], flip.block);
    if (!v) row.values.emplace_back(std::nullopt);
    else if (!after && flip.before == kNoSuchKey)  // the older release ignores the key, set or not
      row.values.emplace_back(set ? *set + " (ignored: no such key in " + ds + ")" : std::string(kNoSuchKey) + " in " + ds);
    else if (set) row.values.emplace_back(*set);
    else row.values.emplace_back(std::string(after ? flip.after : flip.before) + " (default of " + ds + ")");
    releases += (releases.empty() ? "" : ", ") + (ds.empty() ? std::string("unknown") : ds);
  }
  if (!(straddles_before && straddles_after) || !relevant) return std::nullopt;
  char since[32];
  std::snprintf(since, sizeof since, "%d.%d.%d", flip.since[0], flip.since[1], flip.since[2]);
  row.note = flip.before == kNoSuchKey
                 ? std::string("DeepSpeed added this key in ") + since + " (default " + flip.after +
                       "); the sessions ran under " + releases
                 : std::string("DeepSpeed changed this default from ") + flip.before + " to " + flip.after + " in " +
                       since + "; the sessions ran under " + releases;
  return row;
}

// The built-in model's flags with their defaults (docs/engine.md), so "--hidden 256" and no --hidden
// agree; "" where the default depends on the model.
const std::vector<std::pair<std::string, std::string>>& model_flags() {
  static const std::vector<std::pair<std::string, std::string>> flags = {
      {"model", "gpt2"}, {"model-config", ""}, {"layers", "4"}, {"hidden", "256"}, {"heads", "4"}, {"kv-heads", ""}, {"vocab", ""}};
  return flags;
}

// "gpt2 layers=4 hidden=256 heads=4" from a ShardScope run's train flags; empty when not a train run.
std::string model_identity(const SessionDetail& d) {
  const Leaves run = run_leaves(d);
  bool train = false;
  for (const auto& [p, v] : run) train = train || p.rfind("train.", 0) == 0;
  if (!train || !d.info.origin.empty()) return "";
  std::string out;
  for (const auto& [flag, fallback] : model_flags()) {
    const std::string value = leaf(run, "train." + flag).value_or(fallback);
    if (!value.empty()) out += (out.empty() ? "" : " ") + (flag == "model" ? value : flag + "=" + value);
  }
  return out;
}

// A config the file holds as invalid JSON (a hostile or damaged file) diffs as empty, not as a crash.
Leaves config_leaves(const SessionDetail& d) {
  try {
    return d.config_json.empty() ? Leaves{} : flatten_json_text(d.config_json);
  } catch (const nlohmann::json::exception&) {
    return {{"(config)", "not valid JSON"}};
  }
}

std::string label(const SessionDetail& d) { return "#" + std::to_string(d.info.id) + " '" + d.info.name + "'"; }

}  // namespace

std::vector<ChangedValue> regression_changes(const std::vector<SessionDetail>& sessions) {
  std::vector<Leaves> versions, hosts, gpus, builds, configs, runs;
  for (const auto& d : sessions) {
    Leaves by_kind[4];
    for (auto& [path, value] : environment_leaves(d)) {
      const char* kind = environment_kind(path);
      if (!kind) continue;
      const std::string k = kind;
      by_kind[k == "version" ? 0 : k == "gpu" ? 1 : k == "kernel_build" ? 2 : 3].emplace_back(path, value);
    }
    versions.push_back(by_kind[0]), gpus.push_back(by_kind[1]), builds.push_back(by_kind[2]), hosts.push_back(by_kind[3]);
    configs.push_back(config_leaves(d));
    Leaves run;
    for (auto& leaf_value : run_leaves(d))
      if (leaf_value.first != "command_line" && leaf_value.first != "hosts") run.push_back(leaf_value);
    runs.push_back(std::move(run));
  }
  std::vector<ChangedValue> out;
  add_rows(versions, "version", out);
  add_rows(gpus, "gpu", out);
  add_rows(hosts, "host", out);
  add_rows(builds, "kernel_build", out);
  add_rows(configs, "config", out);
  for (const auto& flip : kFlips)
    if (auto row = flip_row(flip, sessions, configs)) out.push_back(std::move(*row));
  add_rows(runs, "run", out);
  return out;
}

std::vector<ChangedValue> deepspeed_release_changes(const std::vector<SessionDetail>& sessions) {
  std::vector<Leaves> configs;
  for (const auto& d : sessions) configs.push_back(config_leaves(d));
  std::vector<ChangedValue> out;
  ChangedValue release{"version", "versions.deepspeed", {}, ""};
  for (const auto& d : sessions) {
    const std::string ds = deepspeed_of(d);
    release.values.emplace_back(ds.empty() ? std::nullopt : std::optional<std::string>(ds));
  }
  const bool differ = std::any_of(release.values.begin(), release.values.end(),
                                  [&](const auto& v) { return v != release.values.front(); });
  if (!differ) return out;
  release.note = "the sessions ran under different DeepSpeed releases (ShardScope's engine follows 0.19.7)";
  out.push_back(std::move(release));
  for (const auto& flip : kFlips)
    if (auto row = flip_row(flip, sessions, configs)) out.push_back(std::move(*row));
  return out;
}

void require_same_model(const std::vector<SessionDetail>& baseline, const std::vector<SessionDetail>& candidate) {
  const SessionDetail& reference = baseline.front();
  const std::string expected = model_identity(reference);
  for (const auto* group : {&baseline, &candidate})
    for (const auto& d : *group) {
      const std::string got = model_identity(d);
      if (expected.empty() || got.empty() || got == expected) continue;
      throw SessionsError(ErrorKind::kInvalidArgument,
                          "session " + label(d) + " trains another model (" + got + ") than " + label(reference) +
                              " (" + expected + "): a regression check compares runs of one model; pick sessions "
                              "of the same model (`shardscope sessions compare` shows both runs' flags)");
    }
}

}  // namespace shardscope::sessions::detail
