#include "app/gui/tune/tune_spec.hpp"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <QProcess>
#include <QString>

#include "configs/hostfile.hpp"
#include "tune/autotuning_block.hpp"
#include "tune/candidate_config.hpp"
#include "tune/search_space.hpp"
#include "tune/tune_error.hpp"

namespace shardscope::gui {
namespace {

void add_flag(std::vector<std::string>& args, const char* flag, const std::string& value) {
  if (!value.empty()) args.insert(args.end(), {flag, value});
}

void add_where(std::vector<std::string>& args, const TuneSpec& s) {
  const char* count_flag = s.device == TuneDevice::kGpus ? "--num_gpus" : "--num_procs";
  if (s.hostfile.empty() && s.processes <= 0)
    throw std::invalid_argument("Where: give the number of ranks per trial (" + std::string(count_flag) + ")");
  if (s.processes > 0) add_flag(args, count_flag, std::to_string(s.processes));
  add_flag(args, "--hostfile", s.hostfile);
  if (!s.hostfile.empty() && s.num_nodes > 0) add_flag(args, "--num_nodes", std::to_string(s.num_nodes));
}

void add_search(std::vector<std::string>& args, const TuneSpec& s) {
  for (const auto& row : s.space) {
    tune::parse_space_flag(row);  // throws the CLI's own words for a row it would refuse
    add_flag(args, "--space", row);
  }
  add_flag(args, "--metric", s.metric);
  add_flag(args, "--tuner", s.tuner);
  add_flag(args, "--budget", s.budget);
  if (s.trials > 0) add_flag(args, "--trials", std::to_string(s.trials));
  if (s.early_stopping >= 0) add_flag(args, "--early-stopping", std::to_string(s.early_stopping));
  add_flag(args, "--profile-steps", s.profile_steps);
  add_flag(args, "--memory-budget", s.memory_budget);
  if (s.memory_margin >= 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", s.memory_margin);
    add_flag(args, "--memory-margin", text);
  }
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "default";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string values_text(const tune::Dimension& d, const char* separator) {
  std::string text;
  for (const auto& v : d.values) text += (text.empty() ? "" : separator) + value_text(v);
  return text;
}

// The space as `shardscope tune` builds it (app/cli/tune_command.cpp: autotuning block, then --space).
tune::SearchSpace space_of(const TuneSpec& spec) {
  const nlohmann::json config = tune::read_user_config(spec.config_path);
  const auto block = tune::read_autotuning_block(config, spec.config_path);
  tune::DefaultSpaceOptions options;
  options.fast = block.fast;
  options.min_micro_batch = block.min_train_micro_batch_size_per_gpu;
  options.max_micro_batch = block.max_train_micro_batch_size_per_gpu;
  std::vector<tune::Dimension> given;
  for (const auto& row : spec.space) given.push_back(tune::parse_space_flag(row));
  return tune::default_search_space(config, tune_world_size(spec), options, given);
}

}  // namespace

std::vector<std::string> split_train_args(const std::string& text) {
  const QString trimmed = QString::fromStdString(text).trimmed();
  if (trimmed.count('"') % 2 || trimmed.count('\'') % 2)
    throw std::invalid_argument("Train arguments: a quote is not closed: " + text);
  std::vector<std::string> words;
  for (const QString& w : QProcess::splitCommand(trimmed)) words.push_back(w.toStdString());
  return words;
}

std::vector<std::string> tune_arguments(const TuneSpec& s) {
  if (s.config_path.empty()) throw std::invalid_argument("Config: choose the DeepSpeed config to tune (--config)");
  if (s.db.empty()) throw std::invalid_argument("Session database: give the file the trials go to (--db)");
  const auto train = split_train_args(s.train_args);
  if (train.empty())
    throw std::invalid_argument("Train arguments: give the model, shape and data every trial trains, e.g. "
                                "--model gpt2 --layers 2 --hidden 64 --heads 2 --device cpu");
  std::vector<std::string> args{"tune", "--config", s.config_path};
  add_where(args, s);
  try {
    add_search(args, s);
  } catch (const tune::TuneError& e) {
    throw std::invalid_argument(std::string("Space: ") + e.what());
  }
  add_flag(args, "--db", s.db);
  add_flag(args, "--out", s.out_dir);
  if (s.resume) args.push_back("--resume");
  if (s.try_dominated) args.push_back("--try-dominated");
  args.push_back("--");
  args.insert(args.end(), train.begin(), train.end());
  return args;
}

int tune_world_size(const TuneSpec& spec) {
  if (spec.hostfile.empty()) return std::max(spec.processes, 1);
  try {
    const auto hostfile = configs::read_hostfile(spec.hostfile);
    if (!hostfile || hostfile->hosts.empty()) return std::max(spec.processes, 1);
    const std::size_t nodes = spec.num_nodes > 0 ? std::min<std::size_t>(hostfile->hosts.size(), spec.num_nodes)
                                                 : hostfile->hosts.size();
    int world = 0;
    for (std::size_t i = 0; i < nodes; ++i) world += spec.processes > 0 ? spec.processes : hostfile->hosts[i].slot_count;
    return std::max(world, 1);
  } catch (const std::exception&) {
    return std::max(spec.processes, 1);  // the launch names the bad hostfile; the preview keeps going
  }
}

SpacePreview preview_space(const TuneSpec& spec) {
  SpacePreview preview;
  if (spec.config_path.empty()) {
    preview.error = "choose a config to see the space the tuner searches";
    return preview;
  }
  try {
    const tune::SearchSpace space = space_of(spec);
    for (const auto& d : space.dimensions) preview.rows.push_back({d.key, values_text(d, ", "), d.origin});
    preview.grid_points = tune::grid_size(space);
    if (space.global_batch)
      preview.note = "train_batch_size " + std::to_string(*space.global_batch) + " at world size " +
                     std::to_string(space.world_size) + ": gradient_accumulation_steps follows the micro-batch";
  } catch (const std::exception& e) {
    preview.error = e.what();
  }
  return preview;
}

std::vector<std::string> default_space_lines(const TuneSpec& spec) {
  TuneSpec defaults = spec;
  defaults.space.clear();
  std::vector<std::string> lines;
  for (const auto& d : space_of(defaults).dimensions) lines.push_back(d.key + "=" + values_text(d, ","));
  return lines;
}

std::string trial_config_path(const TuneSpec& spec, std::int64_t trial) {
  tune::AutotuningBlock block;
  try {
    block = tune::read_autotuning_block(tune::read_user_config(spec.config_path), spec.config_path);
  } catch (const std::exception&) {
    // The tuner refused such a config before writing any trial; DeepSpeed's defaults name the place.
  }
  const std::string out = spec.out_dir.empty() ? block.results_dir : spec.out_dir;
  const std::string exps = block.exps_dir_given ? block.exps_dir : out + "/exps";
  char name[32];
  std::snprintf(name, sizeof name, "trial_%03lld.json", static_cast<long long>(trial));
  return (std::filesystem::path(exps) / name).string();
}

}  // namespace shardscope::gui
