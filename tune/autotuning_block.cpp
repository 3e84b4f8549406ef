#include "tune/autotuning_block.hpp"

#include <set>

#include "tune/tune_error.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;

const std::set<std::string>& known_keys() {
  static const std::set<std::string> keys = {
      "enabled", "fast", "metric", "metric_path", "start_profile_step", "end_profile_step", "tuner_type",
      "tuner_early_stopping", "tuner_num_trials", "results_dir", "exps_dir", "overwrite", "mp_size", "arg_mappings",
      "max_train_batch_size", "min_train_batch_size", "max_train_micro_batch_size_per_gpu",
      "min_train_micro_batch_size_per_gpu", "num_tuning_micro_batch_sizes", "model_info", "model_info_path"};
  return keys;
}

struct Reader {
  const json& block;
  std::string where;  // "ds.json: autotuning"

  const json* get(const std::string& key) const {
    const auto it = block.find(key);
    return it == block.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void refuse(const std::string& key, const json& v, const std::string& wanted) const {
    throw TuneError(where + "." + key + " is " + v.dump() + ": " + wanted);
  }
  void boolean(const std::string& key, bool& out) const {
    if (const json* v = get(key)) {
      if (!v->is_boolean()) refuse(key, *v, "give true or false");
      out = v->get<bool>();
    }
  }
  void integer(const std::string& key, std::int64_t& out, std::int64_t minimum) const {
    if (const json* v = get(key)) {
      if (!v->is_number_integer()) refuse(key, *v, "give a whole number");
      if (v->get<std::int64_t>() < minimum) refuse(key, *v, "give a number of at least " + std::to_string(minimum));
      out = v->get<std::int64_t>();
    }
  }
  bool text(const std::string& key, std::string& out) const {
    if (const json* v = get(key)) {
      if (!v->is_string()) refuse(key, *v, "give a string");
      out = v->get<std::string>();
      return true;
    }
    return false;
  }
};

void read_choices(const Reader& r, AutotuningBlock& b) {
  r.text("metric", b.metric);
  if (b.metric != "latency" && b.metric != "throughput" && b.metric != "flops")
    r.refuse("metric", b.metric, "DeepSpeed's metrics are latency, throughput and flops");
  r.text("tuner_type", b.tuner_type);
  if (b.tuner_type != "gridsearch" && b.tuner_type != "random" && b.tuner_type != "model_based")
    r.refuse("tuner_type", b.tuner_type, "DeepSpeed's tuner types are gridsearch, random and model_based");
}

void read_dirs(const Reader& r, AutotuningBlock& b) {
  b.results_dir_given = r.text("results_dir", b.results_dir);
  // DeepSpeed's own assertions (DeepSpeedAutotuningConfig._initialize).
  if (b.results_dir.empty()) throw TuneError(r.where + ".results_dir: results_dir cannot be empty");
  b.exps_dir_given = r.text("exps_dir", b.exps_dir);
  if (b.exps_dir.empty()) throw TuneError(r.where + ".exps_dir: exps_dir cannot be empty");
  r.boolean("overwrite", b.overwrite);
}

void read_sizes(const Reader& r, AutotuningBlock& b) {
  b.profile_steps_given = r.get("start_profile_step") || r.get("end_profile_step");
  r.integer("start_profile_step", b.start_profile_step, 1);
  r.integer("end_profile_step", b.end_profile_step, 1);
  if (b.end_profile_step <= b.start_profile_step)
    throw TuneError(r.where + ": end_profile_step " + std::to_string(b.end_profile_step) +
                    " must be after start_profile_step " + std::to_string(b.start_profile_step) +
                    " (the profiled window is the steps from start to end)");
  r.integer("tuner_early_stopping", b.tuner_early_stopping, 0);
  r.integer("tuner_num_trials", b.tuner_num_trials, 1);
  r.integer("mp_size", b.mp_size, 1);
  if (b.mp_size != 1)
    r.refuse("mp_size", b.mp_size, "ShardScope trains data-parallel only (no tensor or pipeline parallelism): use 1");
  std::int64_t max_tb = 0;
  r.integer("max_train_batch_size", max_tb, 1);
  if (max_tb > 0) b.max_train_batch_size = max_tb;
  r.integer("min_train_batch_size", b.min_train_batch_size, 1);
  r.integer("max_train_micro_batch_size_per_gpu", b.max_train_micro_batch_size_per_gpu, 1);
  r.integer("min_train_micro_batch_size_per_gpu", b.min_train_micro_batch_size_per_gpu, 1);
  if (b.min_train_micro_batch_size_per_gpu > b.max_train_micro_batch_size_per_gpu)
    throw TuneError(r.where + ": min_train_micro_batch_size_per_gpu " + std::to_string(b.min_train_micro_batch_size_per_gpu) +
                    " is above max_train_micro_batch_size_per_gpu " + std::to_string(b.max_train_micro_batch_size_per_gpu));
  r.integer("num_tuning_micro_batch_sizes", b.num_tuning_micro_batch_sizes, 1);
}

void read_mappings(const Reader& r, AutotuningBlock& b) {
  const json* m = r.get("arg_mappings");
  if (!m) return;
  if (!m->is_object()) r.refuse("arg_mappings", *m, "give an object of ds_config key -> training-script flag");
  for (const auto& [key, flag] : m->items()) {
    if (!flag.is_string() || flag.get<std::string>().rfind("--", 0) != 0)
      r.refuse("arg_mappings." + key, flag, "give the train flag that takes this key's value, e.g. \"--seq-len\"");
    b.arg_mappings[key] = flag.get<std::string>();
  }
}

void note_unused(const Reader& r, AutotuningBlock& b) {
  for (const auto& [key, value] : r.block.items()) {
    if (!known_keys().count(key)) b.notes.push_back(r.where + "." + key + " is not a DeepSpeed 0.19.7 autotuning key; ignored as DeepSpeed ignores it");
  }
  if (r.get("model_info") || r.get("model_info_path"))
    b.notes.push_back(r.where + ".model_info: not needed; the estimator reads the model from the train arguments");
  if (r.get("metric_path")) b.notes.push_back(r.where + ".metric_path: not used; trials are read from their sessions");
  if (b.enabled) b.notes.push_back(r.where + ".enabled: not needed; `shardscope tune` tunes whatever it says");
}

}  // namespace

AutotuningBlock read_autotuning_block(const json& config, const std::string& file_name) {
  AutotuningBlock b;
  const auto it = config.find("autotuning");
  if (it == config.end() || it->is_null()) return b;
  const std::string where = file_name + ": autotuning";
  if (!it->is_object()) throw TuneError(where + " is " + it->dump() + ": give an object, e.g. {\"tuner_type\": \"random\"}");
  b.present = true;
  const Reader r{*it, where};
  r.boolean("enabled", b.enabled);
  r.boolean("fast", b.fast);
  read_choices(r, b);
  read_dirs(r, b);
  read_sizes(r, b);
  read_mappings(r, b);
  note_unused(r, b);
  return b;
}

std::string metric_for_autotuning(const std::string& deepspeed_metric) {
  if (deepspeed_metric == "latency") return "step_time";
  if (deepspeed_metric == "flops") return "tokens_per_s";
  return "samples_per_s";
}

}  // namespace shardscope::tune
